// Helpers of the _fpconform extension: numpy arrays <-> bits, Status -> Python exceptions.
//
// Arrays cross as bits: the Python layer (fpconform/__init__.py) views every array as unsigned
// integers of its element width and passes the format name beside it (ml_dtypes arrays cannot
// pass through the buffer protocol or DLPack). Here they become spans of bits (read in place:
// zero copy) or fpconform::Tensor (one copy, the type the libraries take); results come back as
// freshly allocated unsigned-integer arrays that Python views as the right dtype.
#ifndef FPCONFORM_PYTHON_SRC_ARRAYS_H_
#define FPCONFORM_PYTHON_SRC_ARRAYS_H_

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "cases/tensor_file.h"
#include "formats/format_spec.h"

namespace fpconform::python {

namespace nb = nanobind;

// Any C-contiguous CPU array, read-only accepted.
using InArray = nb::ndarray<nb::c_contig, nb::device::cpu, nb::ro>;

// A user error (ValueError in Python) with `message`.
[[noreturn]] inline void ThrowValue(const std::string& message) { throw std::invalid_argument(message); }

// InvalidArgument, NotFound, FailedPrecondition, OutOfRange -> ValueError; Cancelled (Ctrl-C seen
// by PollInterrupt) -> KeyboardInterrupt; others RuntimeError. Call with the GIL held.
[[noreturn]] inline void ThrowStatus(const absl::Status& s) {
  const std::string m(s.message());
  switch (s.code()) {
    case absl::StatusCode::kCancelled:
      PyErr_SetNone(PyExc_KeyboardInterrupt);
      throw nb::python_error();
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      throw std::invalid_argument(m);
    default:
      throw std::runtime_error(m);
  }
}

// call() (a library function, which takes no Python object and throws nothing) run with the GIL
// released; then, with the GIL back, its value (an absl::StatusOr) or nothing (an absl::Status),
// or ThrowStatus of its error.
template <class F>
auto WithoutGil(F&& call) {
  std::optional<decltype(call())> r;
  {
    nb::gil_scoped_release release;
    r.emplace(call());
  }
  if constexpr (std::is_same_v<decltype(call()), absl::Status>) {
    if (!r->ok()) ThrowStatus(*r);
  } else {
    if (!r->ok()) ThrowStatus(r->status());
    return **std::move(r);
  }
}

// For AuditOptions::cancelled while the GIL is released: true once Python has a pending signal
// (Ctrl-C), which it consumes (the caller raises KeyboardInterrupt from the Cancelled status).
// Only the main thread sees signals; polls from worker threads return false.
bool PollInterrupt();

// A `threads` argument: itself where positive, else the machine's hardware threads (at least 1).
int Threads(int threads);

// The table row of `name`, or ValueError naming `what` and the valid names.
const FormatSpec& NeedFormat(const std::string& name, const std::string& what);

std::vector<int64_t> ShapeOf(const InArray& a);

// Element i of `a` (an unsigned-integer array of 1, 2, 4 or 8 bytes per element) as bits.
uint64_t BitsAt(const InArray& a, size_t i);
// All elements as bits (one copy).
std::vector<uint64_t> AllBits(const InArray& a);
// Checks that `a` holds unsigned integers of `bytes` bytes (the format's container).
void CheckWidth(const InArray& a, int bytes, const std::string& what);

// A Tensor of dtype `dtype` with `a`'s shape and bytes.
Tensor ToTensor(const std::string& dtype, const InArray& a, const std::string& what);

// A new numpy array (unsigned integers of `bytes` bytes per element) from little-endian bytes.
nb::object BytesArray(std::vector<uint8_t>&& data, int bytes, const std::vector<int64_t>& shape);
// A new numpy array of unsigned integers of width `bytes` from bits.
nb::object BitsArray(const std::vector<uint64_t>& bits, int bytes, const std::vector<int64_t>& shape);

template <class T>
nb::object VectorArray(std::vector<T>&& v, const std::vector<int64_t>& shape) {
  auto* holder = new std::vector<T>(std::move(v));
  if (holder->empty()) holder->reserve(1);
  nb::capsule owner(holder, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  std::vector<size_t> sh(shape.begin(), shape.end());
  nb::ndarray<nb::numpy, T> arr(holder->data(), sh.size(), sh.data(), owner);
  return nb::cast(std::move(arr));
}

}  // namespace fpconform::python

#endif  // FPCONFORM_PYTHON_SRC_ARRAYS_H_
