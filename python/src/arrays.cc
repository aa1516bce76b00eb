#include "python/src/arrays.h"

#include <algorithm>
#include <thread>

#include "absl/status/statusor.h"

namespace fpconform::python {

bool PollInterrupt() {
  nb::gil_scoped_acquire acquire;
  if (PyErr_CheckSignals() == 0) return false;
  PyErr_Clear();
  return true;
}

int Threads(int threads) {
  if (threads > 0) return threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

const FormatSpec& NeedFormat(const std::string& name, const std::string& what) {
  const FormatSpec* f = FindFormat(name);
  if (f == nullptr) {
    std::string valid;
    for (const FormatSpec& g : AllFormats()) valid += (valid.empty() ? "" : " ") + std::string(g.name);
    ThrowValue(what + ": unknown dtype '" + name + "' (valid: " + valid + ")");
  }
  return *f;
}

std::vector<int64_t> ShapeOf(const InArray& a) {
  std::vector<int64_t> shape(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) shape[i] = static_cast<int64_t>(a.shape(i));
  return shape;
}

void CheckWidth(const InArray& a, int bytes, const std::string& what) {
  const nb::dlpack::dtype d = a.dtype();
  if (d.code != static_cast<uint8_t>(nb::dlpack::dtype_code::UInt) || d.lanes != 1 ||
      static_cast<int>(d.bits) != 8 * bytes) {
    ThrowValue(what + ": expected the bits as uint" + std::to_string(8 * bytes) + ", got a " +
               std::to_string(static_cast<int>(d.bits)) + "-bit array of type code " +
               std::to_string(static_cast<int>(d.code)));
  }
}

uint64_t BitsAt(const InArray& a, size_t i) {
  const void* p = a.data();
  switch (a.dtype().bits) {
    case 8:
      return static_cast<const uint8_t*>(p)[i];
    case 16:
      return static_cast<const uint16_t*>(p)[i];
    case 32:
      return static_cast<const uint32_t*>(p)[i];
    default:
      return static_cast<const uint64_t*>(p)[i];
  }
}

std::vector<uint64_t> AllBits(const InArray& a) {
  std::vector<uint64_t> out(a.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = BitsAt(a, i);
  return out;
}

Tensor ToTensor(const std::string& dtype, const InArray& a, const std::string& what) {
  const std::optional<int> bytes = TensorDtypeBytes(dtype);
  if (!bytes.has_value()) ThrowValue(what + ": unknown dtype '" + dtype + "'");
  CheckWidth(a, *bytes, what);
  absl::StatusOr<Tensor> t = MakeTensor(dtype, ShapeOf(a));
  if (!t.ok()) ThrowStatus(t.status());
  if (a.nbytes() > 0) std::memcpy(t->data.data(), a.data(), a.nbytes());
  t->source = what;
  return *std::move(t);
}

nb::object BytesArray(std::vector<uint8_t>&& data, int bytes, const std::vector<int64_t>& shape) {
  switch (bytes) {
    case 1:
      return VectorArray<uint8_t>(std::move(data), shape);
    case 2: {
      std::vector<uint16_t> v(data.size() / 2);
      if (!v.empty()) std::memcpy(v.data(), data.data(), data.size());
      return VectorArray<uint16_t>(std::move(v), shape);
    }
    case 4: {
      std::vector<uint32_t> v(data.size() / 4);
      if (!v.empty()) std::memcpy(v.data(), data.data(), data.size());
      return VectorArray<uint32_t>(std::move(v), shape);
    }
    default: {
      std::vector<uint64_t> v(data.size() / 8);
      if (!v.empty()) std::memcpy(v.data(), data.data(), data.size());
      return VectorArray<uint64_t>(std::move(v), shape);
    }
  }
}

nb::object BitsArray(const std::vector<uint64_t>& bits, int bytes, const std::vector<int64_t>& shape) {
  auto narrow = [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> v(bits.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(bits[i]);
    return VectorArray<T>(std::move(v), shape);
  };
  switch (bytes) {
    case 1:
      return narrow(uint8_t{0});
    case 2:
      return narrow(uint16_t{0});
    case 4:
      return narrow(uint32_t{0});
    default:
      return narrow(uint64_t{0});
  }
}

}  // namespace fpconform::python
