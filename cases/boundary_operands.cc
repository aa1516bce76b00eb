// Test operands (boundary_operands.h).
#include "cases/boundary_operands.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace fpconform {

uint64_t FieldsToBits(const FormatSpec& f, bool sign, uint64_t biased, uint64_t frac) {
  uint64_t enc = (biased << f.fraction_bits) | (frac & FractionMask(f));
  if (sign) enc |= SignBit(f);
  return enc << f.pad_bits;
}

uint64_t RandomBits(const FormatSpec& f, CaseRng& rng) {
  const int n = EncodingBits(f);
  const uint64_t mask = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  return (rng.Next() & mask) << f.pad_bits;
}

std::vector<uint64_t> BoundaryOperands(const FormatSpec& f, uint64_t seed) {
  const uint64_t top = MaxBiasedExponent(f);
  const uint64_t emax_biased = static_cast<uint64_t>(Emax(f) + f.bias);
  const uint64_t bias = static_cast<uint64_t>(f.bias);
  std::vector<uint64_t> exps = {0, 1, 2, bias - 1, bias, bias + 1, emax_biased - 1, emax_biased,
                                top};
  const uint64_t fm = FractionMask(f);
  const uint64_t tb = f.fraction_bits > 0 ? uint64_t{1} << (f.fraction_bits - 1) : 0;
  std::vector<uint64_t> fracs = {0, 1 & fm, fm, tb, fm & ~uint64_t{1}, (tb | 1) & fm};
  std::vector<uint64_t> out;
  CaseRng rng(seed, 0xB0B0);
  for (uint64_t e : exps) {
    if (e > top) continue;
    std::vector<uint64_t> fr = fracs;
    fr.push_back(rng.Next() & fm);
    fr.push_back(rng.Next() & fm);
    for (uint64_t frac : fr) {
      for (int s = 0; s < (f.has_sign ? 2 : 1); ++s) out.push_back(FieldsToBits(f, s, e, frac));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

uint64_t RandomOperand(const FormatSpec& f, CaseRng& rng,
                              const std::vector<uint64_t>& boundary) {
  const uint64_t kind = rng.Below(8);
  if (kind < 2) return boundary[rng.Below(boundary.size())];
  if (kind < 5) return RandomBits(f, rng);
  const bool sign = f.has_sign && rng.OneIn(2);
  const uint64_t frac = rng.Next() & FractionMask(f);
  const int64_t top = MaxBiasedExponent(f);
  int64_t e;
  if (kind == 5) {
    e = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(f.fraction_bits) + 4));  // Low.
  } else if (kind == 6) {
    e = top - static_cast<int64_t>(rng.Below(static_cast<uint64_t>(f.fraction_bits) + 3));
  } else {
    e = f.bias - static_cast<int64_t>(f.fraction_bits) - 2 +
        static_cast<int64_t>(rng.Below(static_cast<uint64_t>(2 * f.fraction_bits) + 5));
  }
  e = std::clamp<int64_t>(e, 0, top);
  return FieldsToBits(f, sign, static_cast<uint64_t>(e), frac);
}

uint64_t Near(const FormatSpec& f, uint64_t x, CaseRng& rng, bool negate) {
  const uint64_t enc_mask = (EncodingBits(f) >= 64 ? ~uint64_t{0}
                                                   : (uint64_t{1} << EncodingBits(f)) - 1);
  uint64_t enc = x >> f.pad_bits;
  const uint64_t delta = rng.Below(8);
  enc = rng.OneIn(2) ? enc + delta : enc - delta;
  enc &= enc_mask;
  if (negate) enc ^= SignBit(f);
  return enc << f.pad_bits;
}

}  // namespace fpconform
