// Binary operations on 8-bit float formats by table look-up, bit-identical to the general path
// by construction: each table is filled by calling Add/Sub/Mul/Div (formats/ops.h) on all
// 65,536 operand pairs under the given OpEnv, once, on first use (about 1-2 ms per table), and
// formats/fast_convert_test.cc checks every entry of every table it builds against a fresh
// general-path call.
//
// A table is keyed by (format, op, rounding, saturate, flush_to_zero, denormals_are_zero,
// tininess, nan profile). Stochastic rounding has no table (each result depends on
// OpEnv::sr_random): GetFp8OpTable returns InvalidArgument for it, as for formats whose width
// is not 8 bits. Tables live for the life of the process (at most one per key, 128 KiB each:
// result bits and flags); building is thread-safe, and a built table is immutable.
//
// Example:
//   OpEnv env;                                    // rne, no sat
//   absl::StatusOr<const Fp8OpTable*> t = GetFp8OpTable(Float8E4M3FN(), BinaryOp8::kMul, env);
//   (*t)->ResultAt(0x7E /*448*/, 0x40 /*2*/) == 0x7F;           // NaN: overflow, no Inf
//   (*t)->FlagsAt(0x7E, 0x40) == (kOverflow | kInexact);
//   std::vector<uint8_t> a = {0x38, 0x7E}, b = {0x38, 0x40}, out(2);
//   Flags accrued = ApplyBinaryOp8(**t, a, b, out);           // out == {0x38, 0x7F}
#ifndef FPCONFORM_FORMATS_FP8_TABLES_H_
#define FPCONFORM_FORMATS_FP8_TABLES_H_

#include <array>
#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform {

enum class BinaryOp8 : uint8_t { kAdd, kSub, kMul, kDiv };

struct Fp8OpTable {
  // Index: a * 256 + b (a is the first operand).
  std::array<uint8_t, 65536> result;
  std::array<Flags, 65536> flags;
  uint8_t ResultAt(uint8_t a, uint8_t b) const { return result[size_t{a} << 8 | b]; }
  Flags FlagsAt(uint8_t a, uint8_t b) const { return flags[size_t{a} << 8 | b]; }
};

// The table for `op` on 8-bit float format `f` under `env`, built on first use.
// InvalidArgument for non-8-bit or integer formats and for stochastic rounding.
absl::StatusOr<const Fp8OpTable*> GetFp8OpTable(const FormatSpec& f, BinaryOp8 op,
                                                const OpEnv& env);

// out[i] = op(a[i], b[i]); returns the OR of all flags raised. The three spans must have the
// same size (asserted in debug builds; the shortest length is used otherwise).
Flags ApplyBinaryOp8(const Fp8OpTable& table, std::span<const uint8_t> a,
                     std::span<const uint8_t> b, std::span<uint8_t> out);
// The same without flags (faster: one look-up per element).
void ApplyBinaryOp8NoFlags(const Fp8OpTable& table, std::span<const uint8_t> a,
                           std::span<const uint8_t> b, std::span<uint8_t> out);

// Convenience: look up (or build) the table, then apply it. Same errors as GetFp8OpTable, plus
// InvalidArgument when the spans' sizes differ. `accrued` (optional) receives the OR of flags.
absl::Status ApplyBinaryOp8(const FormatSpec& f, BinaryOp8 op, const OpEnv& env,
                            std::span<const uint8_t> a, std::span<const uint8_t> b,
                            std::span<uint8_t> out, Flags* accrued = nullptr);

}  // namespace fpconform

#endif  // FPCONFORM_FORMATS_FP8_TABLES_H_
