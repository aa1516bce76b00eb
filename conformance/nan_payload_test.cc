// NaN results bit for bit under the four NaN profiles of op_env.h (ieee, canonical, cuda, x86):
// propagation of NaN operands (first NaN operand, quieted, sign kept, top payload bits that fit)
// and the NaN of invalid operations, in every float format and across conversions. The other
// suites compare NaNs by class; this one is about payloads.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conformance/oracle_check.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform::conformance {
namespace {

constexpr NanProfile kProfiles[] = {NanProfile::kIeee, NanProfile::kCanonical,
                                    NanProfile::kCuda, NanProfile::kX86};

// Bits and flags exactly, NaN payload included.
bool CheckExact(const Case& k, uint64_t index, FailureLog& log) {
  const OpResult want = RunOracle(k);
  const OpResult got = RunFormats(k);
  if (want == got) return true;
  log.Add(Explain(k, want, got, 0, index));
  return false;
}

// Every NaN encoding of f (all of them for widths <= 16, else 64 random payloads of each
// sign plus the quiet/signaling extremes).
std::vector<uint64_t> NanValues(const FormatSpec& f) {
  std::vector<uint64_t> out;
  if (EncodingBits(f) <= 16) {
    for (uint64_t e = 0; e < (uint64_t{1} << EncodingBits(f)); ++e) {
      const uint64_t bits = e << f.pad_bits;
      if (MpfrIsNanBits(f, bits)) out.push_back(bits);
    }
    return out;
  }
  const uint64_t fm = FractionMask(f);
  const uint64_t exp = static_cast<uint64_t>(MaxBiasedExponent(f)) << f.fraction_bits;
  // The random payloads: FPCONFORM_SEED when set, else 0 (read once, printed once).
  static const uint64_t seed = TestSeed(0, "nan_payload_test");
  CaseRng rng(seed, 0x4E414E);
  for (int s = 0; s < 2; ++s) {
    const uint64_t sign = s ? SignBit(f) : 0;
    for (uint64_t frac : {uint64_t{1}, fm, fm >> 1, (fm >> 1) + 1}) {
      out.push_back((sign | exp | frac) << f.pad_bits);
    }
    for (int i = 0; i < 64; ++i) {
      uint64_t frac = rng.Next() & fm;
      if (frac == 0) frac = 1;
      out.push_back((sign | exp | frac) << f.pad_bits);
    }
  }
  return out;
}

TEST(NanPayload, NanOperandsAndInvalidOperations) {
  FailureLog log;
  int64_t n = 0;
  for (const FormatSpec* fp : FloatFormats()) {
    const FormatSpec& f = *fp;
    const std::vector<uint64_t> nans = NanValues(f);
    std::vector<uint64_t> partners = BoundaryOperands(f, 1);
    for (size_t i = 0; i < nans.size(); i += 1 + nans.size() / 32) partners.push_back(nans[i]);
    const uint64_t one = OneBits(f);
    for (NanProfile profile : kProfiles) {
      Case k;
      k.f = &f;
      k.env.nan = profile;
      // NaN operand first or second, against every partner (NaNs included).
      for (uint64_t x : nans) {
        for (uint64_t y : partners) {
          for (Op op : {Op::kAdd, Op::kSub, Op::kMul, Op::kDiv}) {
            k.op = op;
            k.a = x;
            k.b = y;
            CheckExact(k, static_cast<uint64_t>(n++), log);
            k.a = y;
            k.b = x;
            CheckExact(k, static_cast<uint64_t>(n++), log);
          }
        }
        k.op = Op::kSqrt;
        k.a = x;
        CheckExact(k, static_cast<uint64_t>(n++), log);
        k.op = Op::kFma;  // The NaN in each position; the other operands 1.
        for (int pos = 0; pos < 3; ++pos) {
          k.a = pos == 0 ? x : one;
          k.b = pos == 1 ? x : one;
          k.c = pos == 2 ? x : one;
          CheckExact(k, static_cast<uint64_t>(n++), log);
        }
      }
      // Invalid operations without NaN operands (formats with Inf).
      if (f.nonfinite == NonFinite::kIeee) {
        const uint64_t inf = InfBits(f), ninf = InfBits(f, true), zero = ZeroBits(f);
        const uint64_t mone = one | SignBit(f) << f.pad_bits;
        const Case invalid[] = {
            {Op::kAdd, &f, nullptr, inf, ninf, 0, k.env},
            {Op::kSub, &f, nullptr, inf, inf, 0, k.env},
            {Op::kMul, &f, nullptr, zero, ninf, 0, k.env},
            {Op::kDiv, &f, nullptr, zero, zero, 0, k.env},
            {Op::kDiv, &f, nullptr, ninf, inf, 0, k.env},
            {Op::kSqrt, &f, nullptr, mone, 0, 0, k.env},
            {Op::kSqrt, &f, nullptr, ninf, 0, 0, k.env},
            {Op::kFma, &f, nullptr, zero, inf, one, k.env},
            {Op::kFma, &f, nullptr, inf, one, ninf, k.env},
        };
        for (const Case& c : invalid) CheckExact(c, static_cast<uint64_t>(n++), log);
      }
    }
  }
  log.Report("NaN payloads (ops)");
  std::cout << "NaN operands and invalid operations x 4 NaN profiles: " << n
            << " cases checked\n";
}

TEST(NanPayload, ConvertNans) {
  FailureLog log;
  int64_t n = 0;
  for (const FormatSpec* from : FloatFormats()) {
    for (const FormatSpec* to : FloatFormats()) {
      for (uint64_t x : NanValues(*from)) {
        for (NanProfile profile : kProfiles) {
          Case k;
          k.op = Op::kConvert;
          k.from = from;
          k.f = to;
          k.a = x;
          k.env.nan = profile;
          CheckExact(k, static_cast<uint64_t>(n++), log);
        }
      }
    }
  }
  log.Report("NaN payloads (convert)");
  std::cout << "NaN conversions x 4 NaN profiles: " << n << " cases checked\n";
}

}  // namespace
}  // namespace fpconform::conformance
