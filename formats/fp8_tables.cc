#include "formats/fp8_tables.h"

#include <cassert>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "formats/ops.h"

namespace fpconform {
namespace {

using Key = std::tuple<const FormatSpec*, BinaryOp8, Rounding, bool, bool, bool, Tininess,
                       NanProfile>;

OpResult Apply(const FormatSpec& f, BinaryOp8 op, uint64_t a, uint64_t b, const OpEnv& env) {
  switch (op) {
    case BinaryOp8::kAdd: return Add(f, a, b, env);
    case BinaryOp8::kSub: return Sub(f, a, b, env);
    case BinaryOp8::kMul: return Mul(f, a, b, env);
    case BinaryOp8::kDiv: return Div(f, a, b, env);
  }
  return {};
}

std::unique_ptr<Fp8OpTable> Build(const FormatSpec& f, BinaryOp8 op, const OpEnv& env) {
  auto t = std::make_unique<Fp8OpTable>();
  for (uint32_t a = 0; a < 256; ++a) {
    for (uint32_t b = 0; b < 256; ++b) {
      OpResult r = Apply(f, op, a, b, env);
      t->result[a << 8 | b] = static_cast<uint8_t>(r.bits);
      t->flags[a << 8 | b] = r.flags;
    }
  }
  return t;
}

}  // namespace

absl::StatusOr<const Fp8OpTable*> GetFp8OpTable(const FormatSpec& f, BinaryOp8 op,
                                                const OpEnv& env) {
  if (!IsFloat(f) || f.width != 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("GetFp8OpTable: '", std::string(f.name), "' is not an 8-bit float format"));
  }
  if (env.rounding == Rounding::kStochastic) {
    return absl::InvalidArgumentError(
        "GetFp8OpTable: stochastic rounding has no table (results depend on sr_random)");
  }
  static std::mutex mu;
  static auto* tables = new std::map<Key, std::unique_ptr<Fp8OpTable>>();
  const Key key{&f, op, env.rounding, env.saturate, env.flush_to_zero, env.denormals_are_zero,
                env.tininess, env.nan};
  std::lock_guard<std::mutex> lock(mu);
  auto it = tables->find(key);
  if (it == tables->end()) it = tables->emplace(key, Build(f, op, env)).first;
  return it->second.get();
}

Flags ApplyBinaryOp8(const Fp8OpTable& table, std::span<const uint8_t> a,
                     std::span<const uint8_t> b, std::span<uint8_t> out) {
  assert(a.size() == b.size() && a.size() == out.size());
  size_t n = a.size() < b.size() ? a.size() : b.size();
  n = n < out.size() ? n : out.size();
  Flags accrued = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t index = size_t{a[i]} << 8 | b[i];
    out[i] = table.result[index];
    accrued |= table.flags[index];
  }
  return accrued;
}

void ApplyBinaryOp8NoFlags(const Fp8OpTable& table, std::span<const uint8_t> a,
                           std::span<const uint8_t> b, std::span<uint8_t> out) {
  assert(a.size() == b.size() && a.size() == out.size());
  size_t n = a.size() < b.size() ? a.size() : b.size();
  n = n < out.size() ? n : out.size();
  for (size_t i = 0; i < n; ++i) out[i] = table.result[size_t{a[i]} << 8 | b[i]];
}

absl::Status ApplyBinaryOp8(const FormatSpec& f, BinaryOp8 op, const OpEnv& env,
                            std::span<const uint8_t> a, std::span<const uint8_t> b,
                            std::span<uint8_t> out, Flags* accrued) {
  if (a.size() != b.size() || a.size() != out.size()) {
    return absl::InvalidArgumentError(absl::StrCat("ApplyBinaryOp8: sizes ", a.size(), ", ",
                                                   b.size(), " and ", out.size(), " differ"));
  }
  absl::StatusOr<const Fp8OpTable*> t = GetFp8OpTable(f, op, env);
  if (!t.ok()) return t.status();
  Flags fl = ApplyBinaryOp8(**t, a, b, out);
  if (accrued != nullptr) *accrued = fl;
  return absl::OkStatus();
}

}  // namespace fpconform
