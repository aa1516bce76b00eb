#include "oracles/exact_sum.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
#endif

#include <gmp.h>

#include "base/isa.h"

namespace fpconform {
namespace {

using Kind = Unpacked::Kind;

// Limb-count bookkeeping: each term adds at most 2 chunks (< 2^32 each) to one limb, so limbs
// stay below 2^62 in magnitude if carries are propagated every 2^30 chunk additions.
constexpr uint64_t kPendingLimit = uint64_t{1} << 30;
constexpr size_t kBlock = size_t{1} << 26;

// The window must hold the largest product: the top float64 product has its LSB at
// 2^(2 * (1023 - 52)) and touches 5 limbs from there; 2 more limbs of headroom above them (the
// dirty range's top limb) hold any carry of up to 2^62 terms, whose sum is < 2^(2048 + 62).
constexpr int kTopProductLimb = (2 * (1023 - 52) - ExactAccumulator::kMinExponent) >> 5;
static_assert(kTopProductLimb + 4 + 2 <= ExactAccumulator::kLimbs - 1);
static_assert(32 * (kTopProductLimb + 4 + 2 + 1) >= 2048 + 62 - ExactAccumulator::kMinExponent);

[[noreturn]] void Die(const char* what, const FormatSpec& f) {
  std::fprintf(stderr, "exact_sum: %s: %.*s\n", what, static_cast<int>(f.name.size()),
               f.name.data());
  std::abort();
}

// Exponent of the LSB of the smallest non-zero value / of the largest finite value.
int MinLsb(const FormatSpec& f) { return Emin(f) - f.fraction_bits; }
int MaxLsb(const FormatSpec& f) { return Emax(f) - f.fraction_bits; }

void CheckFormat(const FormatSpec& f) {
  if (!IsFloat(f)) Die("not a float format", f);
  if (MinLsb(f) < -1074 || Emax(f) > 1023) Die("format range exceeds float64's", f);
}

// A decoded finite operand: (-1)^sign * sig * 2^exp. Zero has sig 0 and exp = the format's
// smallest LSB exponent (so that its position lies inside the format's limb range).
struct Dec {
  uint64_t sig;
  int32_t exp;
  uint32_t sign;
};

// IEEE-encoded formats with Inf, subnormals and a sign (float16, bfloat16, float32, tfloat32,
// float64), read without DAZ: a few shifts and masks per value.
struct IeeeDecoder {
  const FormatSpec* f;
  int pad, fb, sign_shift, exp_adj;
  uint64_t emask, fmask;
  explicit IeeeDecoder(const FormatSpec& spec)
      : f(&spec),
        pad(spec.pad_bits),
        fb(spec.fraction_bits),
        sign_shift(EncodingBits(spec) - 1),
        exp_adj(-spec.bias - spec.fraction_bits),
        emask(static_cast<uint64_t>(MaxBiasedExponent(spec))),
        fmask(FractionMask(spec)) {}
  static bool Accepts(const FormatSpec& s, bool daz) {
    return !daz && s.nonfinite == NonFinite::kIeee && s.nan_encoding == NanEncoding::kIeee &&
           s.has_subnormals && s.has_sign && s.has_zero;
  }
  // False for Inf and NaN.
  bool Decode(uint64_t bits, Dec& d) const {
    const uint64_t b = bits >> pad;
    const uint64_t field = (b >> fb) & emask;
    const uint64_t frac = b & fmask;
    d.sign = static_cast<uint32_t>((b >> sign_shift) & 1);
    d.sig = frac | (static_cast<uint64_t>(field != 0) << fb);
    d.exp = static_cast<int32_t>(field + (field == 0)) + exp_adj;
    return field != emask;
  }
};

// The same with the field widths as constants (float32, bfloat16, float16):
// constant shifts and masks, no decoder state in registers.
template <int kExpBits, int kFracBits, int kPad>
struct FixedIeeeDecoder {
  static constexpr uint64_t kEmask = (uint64_t{1} << kExpBits) - 1;
  static constexpr uint64_t kFmask = (uint64_t{1} << kFracBits) - 1;
  static constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  const FormatSpec* f;
  explicit FixedIeeeDecoder(const FormatSpec& spec) : f(&spec) {}
  static bool Accepts(const FormatSpec& s, bool daz) {
    return IeeeDecoder::Accepts(s, daz) && s.exponent_bits == kExpBits &&
           s.fraction_bits == kFracBits && s.pad_bits == kPad && s.bias == kBias &&
           EncodingBits(s) == 1 + kExpBits + kFracBits;
  }
  bool Decode(uint64_t bits, Dec& d) const {
    const uint64_t b = bits >> kPad;
    const uint64_t field = (b >> kFracBits) & kEmask;
    d.sign = static_cast<uint32_t>((b >> (kExpBits + kFracBits)) & 1);
    d.sig = (b & kFmask) | (static_cast<uint64_t>(field != 0) << kFracBits);
    d.exp = static_cast<int32_t>(field + (field == 0)) - kBias - kFracBits;
    return field != kEmask;
  }
};
using Float32Decoder = FixedIeeeDecoder<8, 23, 0>;
using BFloat16Decoder = FixedIeeeDecoder<8, 7, 0>;
using Float16Decoder = FixedIeeeDecoder<5, 10, 0>;

// Every 8-bit float format: one 256-entry table per (format, daz), built with UnpackBits.
struct Entry8 {
  uint16_t sig;
  int16_t exp;
  uint8_t sign;
  uint8_t finite;  // 1 for zero and finite values.
};

struct Tables8 {
  std::vector<std::array<Entry8, 256>> tables;   // [2 * format index + daz].
  std::vector<std::array<double, 256>> doubles;  // The same values as host doubles (exact).
};

const Tables8& AllTables8() {
  static const Tables8 t = [] {
    Tables8 r;
    const auto formats = AllFormats();
    r.tables.resize(2 * formats.size());
    r.doubles.resize(2 * formats.size());
    for (size_t i = 0; i < formats.size(); ++i) {
      const FormatSpec& f = formats[i];
      if (!IsFloat(f) || f.width != 8) continue;
      for (int daz = 0; daz < 2; ++daz) {
        auto& table = r.tables[2 * i + static_cast<size_t>(daz)];
        for (uint64_t bits = 0; bits < 256; ++bits) {
          Unpacked u = UnpackBits(f, bits, daz != 0);
          Entry8& e = table[bits];
          e.sign = u.sign ? 1 : 0;
          e.finite = u.kind == Kind::kZero || u.kind == Kind::kFinite;
          e.sig = u.kind == Kind::kFinite ? static_cast<uint16_t>(u.significand) : 0;
          e.exp = static_cast<int16_t>(u.kind == Kind::kFinite ? u.exponent : MinLsb(f));
          double& d = r.doubles[2 * i + static_cast<size_t>(daz)][bits];
          switch (u.kind) {
            case Kind::kZero: d = 0.0; break;
            case Kind::kFinite:
              d = std::ldexp(static_cast<double>(u.significand), u.exponent);
              break;
            case Kind::kInf: d = std::numeric_limits<double>::infinity(); break;
            case Kind::kNaN: d = std::numeric_limits<double>::quiet_NaN(); break;
          }
          if (u.sign) d = -d;
        }
      }
    }
    return r;
  }();
  return t;
}

// Index of `f` in AllFormats() (the rows the table builders know), or -1 for a copy.
int FormatIndex(const FormatSpec& f) {
  const auto formats = AllFormats();
  for (size_t i = 0; i < formats.size(); ++i) {
    if (&formats[i] == &f) return static_cast<int>(i);
  }
  return -1;
}

struct Table8Decoder {
  const FormatSpec* f;
  const Entry8* table;
  const double* doubles;  // The values as host doubles (exact; NaN/Inf for NaN/Inf).
  Table8Decoder(const FormatSpec& spec, bool daz)
      : f(&spec),
        table(AllTables8().tables[Slot(spec, daz)].data()),
        doubles(AllTables8().doubles[Slot(spec, daz)].data()) {}
  static size_t Slot(const FormatSpec& spec, bool daz) {
    return 2 * static_cast<size_t>(FormatIndex(spec)) + (daz ? 1 : 0);
  }
  static bool Accepts(const FormatSpec& s) { return s.width == 8 && FormatIndex(s) >= 0; }
  bool Decode(uint64_t bits, Dec& d) const {
    const Entry8& e = table[bits & 0xFF];
    d.sig = e.sig;
    d.exp = e.exp;
    d.sign = e.sign;
    return e.finite != 0;
  }
};

// Anything else (and DAZ for the IEEE formats): UnpackBits per value.
struct GenericDecoder {
  const FormatSpec* f;
  bool daz;
  GenericDecoder(const FormatSpec& spec, bool d) : f(&spec), daz(d) {}
  bool Decode(uint64_t bits, Dec& d) const {
    Unpacked u = UnpackBits(*f, bits, daz);
    d.sign = u.sign ? 1 : 0;
    if (u.kind == Kind::kFinite) {
      d.sig = u.significand;
      d.exp = u.exponent;
      return true;
    }
    d.sig = 0;
    d.exp = MinLsb(*f);
    return u.kind == Kind::kZero;
  }
};

// ---- Host-double products. ----
//
// For formats whose products are exact host doubles and never subnormal or overflowing there
// (p_a + p_b <= 53, product exponents within [-1022, 1023]: every format of the table but
// float64), the product a * b is computed as double(a) * double(b), exactly, and its bits give
// the bucket (sign and biased exponent, 12 bits) and the integer significand to add there
// (53 bits; 2^11 of them fit a uint64 bucket). Zero products land in buckets 0 / 2048 (their
// count tells the signs of the zero terms); NaN/Inf in buckets 0x7FF / 0xFFF, which send the
// chunk to the integer path. This relies on the host converting float32 subnormals exactly:
// it is used only where the x86-64 MXCSR has DAZ clear (checked on every call), and
// exact_sum_test proves it equal to the integer path on every input class.
struct Float32Source {
  double operator()(uint64_t bits) const {
    return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  }
};
struct BFloat16Source {
  double operator()(uint64_t bits) const {
    return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits) << 16));
  }
};
struct Table8Source {
  const double* values;
  double operator()(uint64_t bits) const { return values[bits & 0xFF]; }
};

bool HostDoublesExact() {
#if defined(__x86_64__) && defined(__SSE2__)
  // FPCONFORM_ISA=portable (base/isa.h) takes the integer path, as other hosts do.
  if (ActiveIsa() == Isa::kPortable) return false;
  return (_mm_getcsr() & 0x0040) == 0;  // MXCSR.DAZ clear (Intel SDM Vol.1 §10.2.3).
#else
  return false;  // Elsewhere: the integer path.
#endif
}

bool DoubleProductsExact(const FormatSpec& fa, const FormatSpec& fb) {
  return Precision(fa) + Precision(fb) <= 53 &&
         MinSubnormalExponent(fa) + MinSubnormalExponent(fb) >= -1022 &&
         Emax(fa) + Emax(fb) + 1 <= 1023;
}

constexpr size_t kDoubleChunk = 2048;  // 2^11 significands < 2^53 per uint64 bucket.
constexpr uint64_t kMask52 = (uint64_t{1} << 52) - 1;
constexpr uint64_t kHidden = uint64_t{1} << 52;

// Adds (-1)^sign * v to the limbs at l (m = -sign: (x ^ m) - m is x or -x).
inline void AddChunks2(int64_t* l, uint64_t v, int64_t m) {
  l[0] += (static_cast<int64_t>(v & 0xFFFFFFFFu) ^ m) - m;
  l[1] += (static_cast<int64_t>(v >> 32) ^ m) - m;
}
inline void AddChunks3(int64_t* l, uint128 v, int64_t m) {
  l[0] += (static_cast<int64_t>(static_cast<uint64_t>(v) & 0xFFFFFFFFu) ^ m) - m;
  l[1] += (static_cast<int64_t>(static_cast<uint64_t>(v >> 32) & 0xFFFFFFFFu) ^ m) - m;
  l[2] += (static_cast<int64_t>(static_cast<uint64_t>(v >> 64)) ^ m) - m;
}

// Kernel modes by the bits of a product of significands: 0: prod << 31 fits 64 bits (two limb
// touches); 1: prod fits 64 bits (three); 2: up to 106 bits (float64; five).
enum Mode { kTwo = 0, kThree = 1, kWide = 2 };
constexpr int kTouched[] = {2, 3, 5};

int ModeFor(int product_bits) {
  if (product_bits + 31 <= 64) return kTwo;
  if (product_bits <= 64) return kThree;
  return kWide;
}

// Widens an accumulator's dirty limb range [lo, hi] over the limbs that terms whose lowest bit
// is 2^e, lsb_lo <= e <= lsb_hi, can touch: `touched` limbs from the one of 2^e, and 2 more for
// the carries.
void CoverLimbs(int& lo, int& hi, int lsb_lo, int lsb_hi, int touched) {
  constexpr int kMin = ExactAccumulator::kMinExponent;
  lo = std::min(lo, (lsb_lo - kMin) >> 5);
  hi = std::max(hi, std::min(((lsb_hi - kMin) >> 5) + touched - 1 + 2,
                             ExactAccumulator::kLimbs - 1));
}

template <int kMode>
inline void AddAt(int64_t* limbs, int32_t pos, uint64_t sig_a, uint64_t sig_b, int64_t m,
                  uint64_t& nonzero) {
  int64_t* l = limbs + (pos >> 5);
  const unsigned sh = static_cast<unsigned>(pos) & 31;
  if constexpr (kMode == kTwo) {
    const uint64_t p = sig_a * sig_b;
    nonzero |= p;
    AddChunks2(l, p << sh, m);
  } else if constexpr (kMode == kThree) {
    const uint64_t p = sig_a * sig_b;
    nonzero |= p;
    AddChunks3(l, uint128{p} << sh, m);
  } else {
    const uint128 p = uint128{sig_a} * sig_b;
    const uint64_t lo = static_cast<uint64_t>(p), hi = static_cast<uint64_t>(p >> 64);
    nonzero |= lo | hi;
    AddChunks3(l, uint128{lo} << sh, m);
    AddChunks3(l + 2, uint128{hi} << sh, m);
  }
}

}  // namespace

// ---- Kernels (friends of ExactAccumulator). ----

namespace {

// The hot loops: decoders by value and limbs through a restrict pointer, so that nothing the
// loop stores can alias what it reads. Each returns the index of the first term with a NaN/Inf
// operand (or n); the caller handles that term on the scalar path and resumes after it.
template <int kMode, class DA, class DB>
size_t DotLoop(int64_t* __restrict limbs, const DA da, const DB db, const uint64_t* a,
               const uint64_t* b, size_t i, size_t n, uint32_t& signs_out,
               uint64_t& nonzero_out) {
  constexpr int kMin = ExactAccumulator::kMinExponent;
  uint32_t sign_or = 0, sign_and = 1;  // Any term negative; every term negative.
  uint64_t nonzero = 0;
  for (; i < n; ++i) {
    Dec x, y;
    const bool ok_x = da.Decode(a[i], x);
    const bool ok_y = db.Decode(b[i], y);
    if (!(ok_x && ok_y)) [[unlikely]] break;
    const uint32_t sign = x.sign ^ y.sign;
    sign_or |= sign;
    sign_and &= sign;
    AddAt<kMode>(limbs, x.exp + y.exp - kMin, x.sig, y.sig, -static_cast<int64_t>(sign),
                 nonzero);
  }
  if (sign_or != 0) signs_out |= 2;    // A term with sign -.
  if (sign_and == 0) signs_out |= 1;   // A term with sign + (none if no iteration ran).
  nonzero_out |= nonzero;
  return i;
}

template <int kMode, class D>
size_t SumLoop(int64_t* __restrict limbs, const D d, const uint64_t* x, size_t i, size_t n,
               uint32_t& signs_out, uint64_t& nonzero_out) {
  constexpr int kMin = ExactAccumulator::kMinExponent;
  uint32_t sign_or = 0, sign_and = 1;  // Any term negative; every term negative.
  uint64_t nonzero = 0;
  for (; i < n; ++i) {
    Dec v;
    if (!d.Decode(x[i], v)) [[unlikely]] break;
    sign_or |= v.sign;
    sign_and &= v.sign;
    AddAt<kMode>(limbs, v.exp - kMin, v.sig, 1, -static_cast<int64_t>(v.sign), nonzero);
  }
  if (sign_or != 0) signs_out |= 2;    // A term with sign -.
  if (sign_and == 0) signs_out |= 1;   // A term with sign + (none if no iteration ran).
  nonzero_out |= nonzero;
  return i;
}

// Exponent buckets: for products of at most kMaxBucketBits bits, term i adds its signed
// product to bucket[exp_a + exp_b - base] (one read-modify-write of a 64-bit integer, no
// shifts); every 2^(62 - product bits) terms, and at the end, the non-zero buckets are added
// into the limbs at their bit offsets. A bucket holds fewer than 2^62 in magnitude.
constexpr int kMaxBucketBits = 56;
constexpr int kMaxBuckets = 1024;

// Two passes per chunk of kChunk terms: (1) decode, multiply and sign every term into
// (bucket index, signed product) arrays, a branch-free loop the compiler vectorizes; (2) add
// each signed product into its bucket. A chunk with a NaN/Inf operand is redone term by term.
constexpr size_t kChunk = 256;

template <class DA, class DB>
size_t BucketLoop(int64_t* __restrict buckets, const DA da, const DB db, int base,
                  const uint64_t* a, const uint64_t* b, size_t i, size_t n, uint32_t& signs_out,
                  uint64_t& nonzero_out) {
  uint64_t neg = 0, nonzero = 0, count = 0;
  alignas(64) int64_t val[kChunk];
  alignas(64) int32_t idx[kChunk];
  while (i < n) {
    const size_t m = std::min(kChunk, n - i);
    const uint64_t* __restrict pa = a + i;
    const uint64_t* __restrict pb = b + i;
    uint32_t bad = 0;
    uint64_t chunk_neg = 0, chunk_nonzero = 0;
    for (size_t j = 0; j < m; ++j) {
      Dec x, y;
      const bool ok_x = da.Decode(pa[j], x);
      const bool ok_y = db.Decode(pb[j], y);
      bad |= static_cast<uint32_t>(!(ok_x & ok_y));
      const uint64_t sign = x.sign ^ y.sign;
      const uint64_t p = x.sig * y.sig;
      chunk_nonzero |= p;
      chunk_neg += sign;
      val[j] = static_cast<int64_t>((p ^ (0 - sign)) + sign);
      idx[j] = x.exp + y.exp - base;
    }
    if (bad != 0) [[unlikely]] {
      // Redo this chunk term by term up to its first special term.
      for (size_t j = 0; j < m; ++j, ++i) {
        Dec x, y;
        const bool ok_x = da.Decode(a[i], x);
        const bool ok_y = db.Decode(b[i], y);
        if (!(ok_x && ok_y)) break;
        const uint64_t sign = x.sign ^ y.sign;
        const uint64_t p = x.sig * y.sig;
        nonzero |= p;
        neg += sign;
        ++count;
        buckets[x.exp + y.exp - base] += static_cast<int64_t>((p ^ (0 - sign)) + sign);
      }
      break;
    }
    for (size_t j = 0; j < m; ++j) buckets[idx[j]] += val[j];
    neg += chunk_neg;
    nonzero |= chunk_nonzero;
    count += m;
    i += m;
  }
  if (neg != 0) signs_out |= 2;          // A term with sign -.
  if (neg != count) signs_out |= 1;      // A term with sign +.
  nonzero_out |= nonzero;
  return i;
}

// Adds terms [start, end): fast(i, end) adds terms from i on and returns where it stopped (end, or
// a term it does not take), which slow(i) adds.
template <class Fast, class Slow>
void AddRun(size_t start, size_t end, Fast fast, Slow slow) {
  for (size_t i = start; i < end;) {
    i = fast(i, end);
    if (i < end) {
      slow(i);
      ++i;
    }
  }
}

// Adds terms [0, n) by AddRun in blocks of kBlock: before a block, normalize() when its additions
// (two limb additions per term at most) could take `pending` past kPendingLimit.
template <class Normalize, class Fast, class Slow>
void AddInBlocks(size_t n, uint64_t& pending, Normalize normalize, Fast fast, Slow slow) {
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t end = std::min(n, start + kBlock);
    if (pending + 2 * (end - start) > kPendingLimit) normalize();
    pending += 2 * (end - start);
    AddRun(start, end, fast, slow);
  }
}

}  // namespace

template <class DA, class DB>
void DotKernel(ExactAccumulator& acc, const DA& da, std::span<const uint64_t> a, const DB& db,
               std::span<const uint64_t> b) {
  const FormatSpec& fa = *da.f;
  const FormatSpec& fb = *db.f;
  const int product_bits = Precision(fa) + Precision(fb);
  const int mode = ModeFor(product_bits);
  // The lowest bits of the finite products: 2^base .. 2^top.
  const int base = MinLsb(fa) + MinLsb(fb);
  const int top = MaxLsb(fa) + MaxLsb(fb);
  // The limbs they can touch (the bucket fold touches 3 limbs per bucket).
  CoverLimbs(acc.lo_, acc.hi_, base, top, std::max(kTouched[mode], 3));
  uint32_t signs = 0;
  uint64_t nonzero = 0;
  const size_t n = a.size();
  const int buckets = top - base + 1;
  const auto slow = [&](size_t i) { acc.AddProductUncounted(fa, a[i], fb, b[i]); };
  if (product_bits <= kMaxBucketBits && buckets <= kMaxBuckets) {
    std::array<int64_t, kMaxBuckets> bucket;
    std::fill_n(bucket.begin(), buckets, 0);
    const size_t fold_every = size_t{1} << std::min(30, 62 - product_bits);
    for (size_t start = 0; start < n; start += fold_every) {
      const size_t end = std::min(n, start + fold_every);
      AddRun(
          start, end,
          [&](size_t i, size_t stop) {
            return BucketLoop(bucket.data(), da, db, base, a.data(), b.data(), i, stop, signs,
                              nonzero);
          },
          slow);
      acc.FoldBuckets(bucket.data(), buckets, base);
    }
  } else {
    AddInBlocks(
        n, acc.pending_, [&] { acc.Normalize(); },
        [&](size_t i, size_t end) {
          int64_t* limbs = acc.limbs_.data();
          const uint64_t* pa = a.data();
          const uint64_t* pb = b.data();
          if (mode == kTwo) return DotLoop<kTwo>(limbs, da, db, pa, pb, i, end, signs, nonzero);
          if (mode == kThree) return DotLoop<kThree>(limbs, da, db, pa, pb, i, end, signs, nonzero);
          return DotLoop<kWide>(limbs, da, db, pa, pb, i, end, signs, nonzero);
        },
        slow);
  }
  acc.terms_ += n;
  acc.term_signs_ |= static_cast<uint8_t>(signs);
  acc.nonzero_term_ = acc.nonzero_term_ || nonzero != 0;
}

template <class D>
void SumKernel(ExactAccumulator& acc, const D& d, std::span<const uint64_t> x) {
  const FormatSpec& f = *d.f;
  const int mode = ModeFor(Precision(f)) == kTwo ? kTwo : kThree;
  CoverLimbs(acc.lo_, acc.hi_, MinLsb(f), MaxLsb(f), kTouched[mode]);
  uint32_t signs = 0;
  uint64_t nonzero = 0;
  const size_t n = x.size();
  AddInBlocks(
      n, acc.pending_, [&] { acc.Normalize(); },
      [&](size_t i, size_t end) {
        int64_t* limbs = acc.limbs_.data();
        if (mode == kTwo) return SumLoop<kTwo>(limbs, d, x.data(), i, end, signs, nonzero);
        return SumLoop<kThree>(limbs, d, x.data(), i, end, signs, nonzero);
      },
      [&](size_t i) { acc.AddUncounted(f, x[i]); });
  acc.terms_ += n;
  acc.term_signs_ |= static_cast<uint8_t>(signs);
  acc.nonzero_term_ = acc.nonzero_term_ || nonzero != 0;
}

struct DoubleKernels {
  // kDot: sum of sa(a[i]) * sb(b[i]); otherwise sum of sa(a[i]) (b unused). `fallback(start, m)`
  // adds the terms [start, start + m) on the integer path (it counts them).
  template <bool kDot, class SA, class SB, class Fallback>
  static void Run(ExactAccumulator& acc, const FormatSpec& fa, const FormatSpec* fb, SA sa,
                  SB sb, std::span<const uint64_t> a, std::span<const uint64_t> b,
                  Fallback&& fallback) {
    constexpr int kMin = ExactAccumulator::kMinExponent;
    // Biased double exponents of the non-zero products (or values).
    const int e_lo = 1023 + MinSubnormalExponent(fa) + (kDot ? MinSubnormalExponent(*fb) : 0);
    const int e_hi = 1023 + Emax(fa) + (kDot ? Emax(*fb) + 1 : 0);
    // Bucket e holds multiples of 2^(e - 1075); its sum (< 2^64) touches 3 limbs from there.
    CoverLimbs(acc.lo_, acc.hi_, e_lo - 1075, e_hi - 1075, 3);
    // Two bucket sets, for even and odd terms, so that runs of products in one bucket do not
    // serialize on one memory location; each set takes at most kDoubleChunk / 2 terms.
    alignas(64) uint64_t bucket[2][4096];
    auto clear = [&] {
      for (auto& set : bucket) {
        set[0] = set[2048] = set[0x7FF] = set[0xFFF] = 0;
        std::fill(set + e_lo, set + e_hi + 1, uint64_t{0});
        std::fill(set + 2048 + e_lo, set + 2048 + e_hi + 1, uint64_t{0});
      }
    };
    clear();
    uint8_t signs = 0;
    bool nonzero = false;
    const size_t n = a.size();
    for (size_t start = 0; start < n; start += kDoubleChunk) {
      const size_t m = std::min(kDoubleChunk, n - start);
      const uint64_t* __restrict pa = a.data() + start;
      const uint64_t* __restrict pb = b.data() + start;
      uint64_t* __restrict b0 = bucket[0];
      uint64_t* __restrict b1 = bucket[1];
      auto term = [&](size_t j) {
        double p = sa(pa[j]);
        if constexpr (kDot) p *= sb(pb[j]);
        return std::bit_cast<uint64_t>(p);
      };
      size_t j = 0;
      for (; j + 1 < m; j += 2) {
        const uint64_t u0 = term(j), u1 = term(j + 1);
        b0[u0 >> 52] += (u0 & kMask52) | kHidden;
        b1[u1 >> 52] += (u1 & kMask52) | kHidden;
      }
      if (j < m) {
        const uint64_t u0 = term(j);
        b0[u0 >> 52] += (u0 & kMask52) | kHidden;
      }
      if ((b0[0x7FF] | b0[0xFFF] | b1[0x7FF] | b1[0xFFF]) != 0) [[unlikely]] {
        clear();
        fallback(start, m);
        continue;
      }
      acc.terms_ += m;
      if ((b0[0] | b1[0]) != 0) signs |= 1;
      if ((b0[2048] | b1[2048]) != 0) signs |= 2;
      b0[0] = b0[2048] = b1[0] = b1[2048] = 0;
      for (int sgn = 0; sgn < 2; ++sgn) {
        uint64_t* r0 = b0 + 2048 * sgn;
        uint64_t* r1 = b1 + 2048 * sgn;
        const int64_t mask = -static_cast<int64_t>(sgn);
        for (int e0 = e_lo; e0 <= e_hi; e0 += 8) {
          // Skip 8 empty buckets at a time.
          const int e1 = std::min(e0 + 8, e_hi + 1);
          uint64_t any = 0;
          for (int e = e0; e < e1; ++e) any |= r0[e] | r1[e];
          if (any == 0) continue;
          for (int e = e0; e < e1; ++e) {
            const uint64_t v = r0[e] + r1[e];  // Each < 2^63: 1024 values < 2^53.
            if (v == 0) continue;
            r0[e] = r1[e] = 0;
            nonzero = true;
            signs |= static_cast<uint8_t>(1 << sgn);
            if (acc.pending_ + 1 > kPendingLimit) acc.Normalize();
            ++acc.pending_;
            const int32_t pos = e - 1075 - kMin;
            AddChunks3(acc.limbs_.data() + (pos >> 5), uint128{v} << (pos & 31), mask);
          }
        }
      }
    }
    acc.term_signs_ |= signs;
    acc.nonzero_term_ = acc.nonzero_term_ || nonzero;
  }
};

// ---- ExactAccumulator. ----

ExactAccumulator::ExactAccumulator(bool denormals_are_zero) : daz_(denormals_are_zero) {
  limbs_.fill(0);
}

void ExactAccumulator::Reset() {
  for (int i = lo_; i <= hi_; ++i) limbs_[static_cast<size_t>(i)] = 0;
  lo_ = kLimbs;
  hi_ = -1;
  pending_ = 0;
  terms_ = 0;
  term_signs_ = 0;
  nonzero_term_ = false;
  nan_ = signaling_ = invalid_ = pos_inf_ = neg_inf_ = false;
  nan_format_ = nullptr;
  nan_value_ = Unpacked{};
}

void ExactAccumulator::AddFinite(bool sign, int32_t exp, uint128 sig) {
  const int32_t pos = exp - kMinExponent;
  CoverLimbs(lo_, hi_, exp, exp, kTouched[kWide]);
  if (pending_ + 2 > kPendingLimit) Normalize();
  pending_ += 2;
  const int64_t m = sign ? -1 : 0;
  uint64_t nonzero = 0;
  AddAt<kWide>(limbs_.data(), pos, static_cast<uint64_t>(sig), 1, m, nonzero);
  const uint64_t high = static_cast<uint64_t>(sig >> 64);
  if (high != 0) AddAt<kWide>(limbs_.data(), pos + 64, high, 1, m, nonzero);
  nonzero_term_ = nonzero_term_ || nonzero != 0;
}

void ExactAccumulator::FoldBuckets(int64_t* bucket, int count, int base) {
  for (int j = 0; j < count; ++j) {
    const int64_t v = bucket[j];
    if (v == 0) continue;
    bucket[j] = 0;
    if (pending_ + 1 > kPendingLimit) Normalize();
    ++pending_;  // One chunk (< 2^32) into each of 3 limbs.
    const int32_t pos = base + j - kMinExponent;
    const int64_t m = v < 0 ? -1 : 0;
    const uint64_t mag = static_cast<uint64_t>((v ^ m) - m);
    AddChunks3(limbs_.data() + (pos >> 5), uint128{mag} << (pos & 31), m);
  }
}

void ExactAccumulator::AddSpecial(const FormatSpec& fa, const Unpacked& x, const FormatSpec* fb,
                                  const Unpacked* y) {
  const bool x_nan = x.kind == Kind::kNaN;
  const bool y_nan = y != nullptr && y->kind == Kind::kNaN;
  if (y != nullptr && ((x.kind == Kind::kInf && y->kind == Kind::kZero) ||
                       (x.kind == Kind::kZero && y->kind == Kind::kInf))) {
    invalid_ = true;
  }
  if (x_nan || y_nan) {
    if (!nan_) {
      nan_ = true;
      nan_format_ = x_nan ? &fa : fb;
      nan_value_ = x_nan ? x : *y;
    }
    signaling_ = signaling_ || (x_nan && x.signaling) || (y_nan && y->signaling);
    return;
  }
  if (invalid_) return;
  bool sign = x.sign;
  if (y != nullptr) sign = sign != y->sign;
  (sign ? neg_inf_ : pos_inf_) = true;
  if (pos_inf_ && neg_inf_) invalid_ = true;
}

void ExactAccumulator::AddProductUncounted(const FormatSpec& fa, uint64_t a,
                                           const FormatSpec& fb, uint64_t b) {
  CheckFormat(fa);
  CheckFormat(fb);
  const Unpacked x = UnpackBits(fa, a, daz_);
  const Unpacked y = UnpackBits(fb, b, daz_);
  const bool finite_x = x.kind == Kind::kZero || x.kind == Kind::kFinite;
  const bool finite_y = y.kind == Kind::kZero || y.kind == Kind::kFinite;
  if (!finite_x || !finite_y) {
    AddSpecial(fa, x, &fb, &y);
    return;
  }
  const bool sign = x.sign != y.sign;
  term_signs_ |= static_cast<uint8_t>(1u << (sign ? 1 : 0));
  if (x.kind == Kind::kZero || y.kind == Kind::kZero) return;
  AddFinite(sign, x.exponent + y.exponent, uint128{x.significand} * y.significand);
}

void ExactAccumulator::AddUncounted(const FormatSpec& f, uint64_t x) {
  CheckFormat(f);
  const Unpacked u = UnpackBits(f, x, daz_);
  if (u.kind == Kind::kNaN || u.kind == Kind::kInf) {
    AddSpecial(f, u, nullptr, nullptr);
    return;
  }
  term_signs_ |= static_cast<uint8_t>(1u << (u.sign ? 1 : 0));
  if (u.kind == Kind::kZero) return;
  AddFinite(u.sign, u.exponent, u.significand);
}

void ExactAccumulator::AddProduct(const FormatSpec& fa, uint64_t a, const FormatSpec& fb,
                                  uint64_t b) {
  ++terms_;
  AddProductUncounted(fa, a, fb, b);
}

void ExactAccumulator::Add(const FormatSpec& f, uint64_t x) {
  ++terms_;
  AddUncounted(f, x);
}

void ExactAccumulator::AddDot(const FormatSpec& fa, std::span<const uint64_t> a,
                              const FormatSpec& fb, std::span<const uint64_t> b) {
  if (a.size() != b.size()) {
    std::fprintf(stderr, "exact_sum: AddDot: a.size() %zu != b.size() %zu\n", a.size(),
                 b.size());
    std::abort();
  }
  CheckFormat(fa);
  CheckFormat(fb);
  if (HostDoublesExact() && DoubleProductsExact(fa, fb)) {
    auto fallback = [&](size_t start, size_t m) {
      AddDotInteger(fa, a.subspan(start, m), fb, b.subspan(start, m));
    };
    auto with_b = [&](auto sa) {
      if (Float32Decoder::Accepts(fb, daz_)) {
        DoubleKernels::Run<true>(*this, fa, &fb, sa, Float32Source{}, a, b, fallback);
      } else if (BFloat16Decoder::Accepts(fb, daz_)) {
        DoubleKernels::Run<true>(*this, fa, &fb, sa, BFloat16Source{}, a, b, fallback);
      } else if (Table8Decoder::Accepts(fb)) {
        DoubleKernels::Run<true>(*this, fa, &fb, sa,
                                 Table8Source{Table8Decoder(fb, daz_).doubles}, a, b, fallback);
      } else {
        AddDotInteger(fa, a, fb, b);
      }
    };
    if (Float32Decoder::Accepts(fa, daz_)) return with_b(Float32Source{});
    if (BFloat16Decoder::Accepts(fa, daz_)) return with_b(BFloat16Source{});
    if (Table8Decoder::Accepts(fa)) return with_b(Table8Source{Table8Decoder(fa, daz_).doubles});
  }
  AddDotInteger(fa, a, fb, b);
}

void ExactAccumulator::AddDotInteger(const FormatSpec& fa, std::span<const uint64_t> a,
                                     const FormatSpec& fb, std::span<const uint64_t> b) {
  // Decoders: constant-field IEEE (float32, bfloat16, float16), run-time-field IEEE (float64,
  // tfloat32), 256-entry tables (8-bit formats); anything else, or DAZ on a 16/32/64-bit
  // format, takes UnpackBits on both sides.
  const bool generic = !(IeeeDecoder::Accepts(fa, daz_) || Table8Decoder::Accepts(fa)) ||
                       !(IeeeDecoder::Accepts(fb, daz_) || Table8Decoder::Accepts(fb));
  if (generic) {
    DotKernel(*this, GenericDecoder(fa, daz_), a, GenericDecoder(fb, daz_), b);
    return;
  }
  auto with_b = [&](const auto& da) {
    if (Float32Decoder::Accepts(fb, daz_)) DotKernel(*this, da, a, Float32Decoder(fb), b);
    else if (BFloat16Decoder::Accepts(fb, daz_)) DotKernel(*this, da, a, BFloat16Decoder(fb), b);
    else if (Float16Decoder::Accepts(fb, daz_)) DotKernel(*this, da, a, Float16Decoder(fb), b);
    else if (IeeeDecoder::Accepts(fb, daz_)) DotKernel(*this, da, a, IeeeDecoder(fb), b);
    else DotKernel(*this, da, a, Table8Decoder(fb, daz_), b);
  };
  if (Float32Decoder::Accepts(fa, daz_)) with_b(Float32Decoder(fa));
  else if (BFloat16Decoder::Accepts(fa, daz_)) with_b(BFloat16Decoder(fa));
  else if (Float16Decoder::Accepts(fa, daz_)) with_b(Float16Decoder(fa));
  else if (IeeeDecoder::Accepts(fa, daz_)) with_b(IeeeDecoder(fa));
  else with_b(Table8Decoder(fa, daz_));
}

void ExactAccumulator::AddSum(const FormatSpec& f, std::span<const uint64_t> x) {
  CheckFormat(f);
  if (HostDoublesExact() && Precision(f) <= 53 && MinSubnormalExponent(f) >= -1022 &&
      Emax(f) <= 1023) {
    auto fallback = [&](size_t start, size_t m) { AddSumInteger(f, x.subspan(start, m)); };
    const Float32Source unused{};
    if (Float32Decoder::Accepts(f, daz_)) {
      return DoubleKernels::Run<false>(*this, f, nullptr, Float32Source{}, unused, x, x, fallback);
    }
    if (BFloat16Decoder::Accepts(f, daz_)) {
      return DoubleKernels::Run<false>(*this, f, nullptr, BFloat16Source{}, unused, x, x,
                                       fallback);
    }
    if (Table8Decoder::Accepts(f)) {
      return DoubleKernels::Run<false>(*this, f, nullptr,
                                       Table8Source{Table8Decoder(f, daz_).doubles}, unused, x, x,
                                       fallback);
    }
  }
  AddSumInteger(f, x);
}

void ExactAccumulator::AddSumInteger(const FormatSpec& f, std::span<const uint64_t> x) {
  if (Float32Decoder::Accepts(f, daz_)) SumKernel(*this, Float32Decoder(f), x);
  else if (BFloat16Decoder::Accepts(f, daz_)) SumKernel(*this, BFloat16Decoder(f), x);
  else if (IeeeDecoder::Accepts(f, daz_)) SumKernel(*this, IeeeDecoder(f), x);
  else if (Table8Decoder::Accepts(f)) SumKernel(*this, Table8Decoder(f, daz_), x);
  else SumKernel(*this, GenericDecoder(f, daz_), x);
}

void ExactAccumulator::Normalize() {
  if (lo_ <= hi_) {
    int64_t carry = 0;
    for (int i = lo_; i < hi_; ++i) {
      const int64_t v = limbs_[static_cast<size_t>(i)] + carry;
      limbs_[static_cast<size_t>(i)] = v & 0xFFFFFFFF;
      carry = v >> 32;  // Arithmetic shift: floor division by 2^32.
    }
    limbs_[static_cast<size_t>(hi_)] += carry;
  }
  pending_ = 0;
}

bool ExactAccumulator::Magnitude(std::array<uint32_t, kLimbs + 3>& mag, int& top) const {
  mag.fill(0);
  top = -1;
  if (lo_ > hi_) return false;
  std::array<int64_t, kLimbs> w;
  int64_t carry = 0;
  for (int i = lo_; i < hi_; ++i) {
    const int64_t v = limbs_[static_cast<size_t>(i)] + carry;
    w[static_cast<size_t>(i)] = v & 0xFFFFFFFF;
    carry = v >> 32;
  }
  w[static_cast<size_t>(hi_)] = limbs_[static_cast<size_t>(hi_)] + carry;
  const bool negative = w[static_cast<size_t>(hi_)] < 0;
  if (negative) {
    carry = 0;
    for (int i = lo_; i < hi_; ++i) {
      const int64_t v = -w[static_cast<size_t>(i)] + carry;
      w[static_cast<size_t>(i)] = v & 0xFFFFFFFF;
      carry = v >> 32;
    }
    w[static_cast<size_t>(hi_)] = -w[static_cast<size_t>(hi_)] + carry;
  }
  // The headroom limbs guarantee the top limb of the magnitude holds < 2^32 (header).
  if (w[static_cast<size_t>(hi_)] < 0 || w[static_cast<size_t>(hi_)] > 0xFFFFFFFF) {
    std::fprintf(stderr, "exact_sum: accumulator overflow (more than 2^62 terms?)\n");
    std::abort();
  }
  for (int i = lo_; i <= hi_; ++i) {
    mag[static_cast<size_t>(i)] = static_cast<uint32_t>(w[static_cast<size_t>(i)]);
    if (mag[static_cast<size_t>(i)] != 0) top = i;
  }
  return negative && top >= 0;
}

namespace {

using Mag = std::array<uint32_t, ExactAccumulator::kLimbs + 3>;

// 64 bits of the magnitude starting at bit `start` (>= 0).
uint64_t Bits64(const Mag& mag, int start) {
  const size_t i = static_cast<size_t>(start >> 5);
  const unsigned sh = static_cast<unsigned>(start) & 31;
  const uint128 v = uint128{mag[i]} | (uint128{mag[i + 1]} << 32) | (uint128{mag[i + 2]} << 64);
  return static_cast<uint64_t>(v >> sh);
}

int LeadingBit(const Mag& mag, int top) {
  return top * 32 + 31 - std::countl_zero(mag[static_cast<size_t>(top)]);
}

int TrailingBit(const Mag& mag) {
  for (size_t i = 0; i < mag.size(); ++i) {
    if (mag[i] != 0) return static_cast<int>(i) * 32 + std::countr_zero(mag[i]);
  }
  return -1;
}

bool BitAt(const Mag& mag, int i) {
  return (mag[static_cast<size_t>(i >> 5)] >> (static_cast<unsigned>(i) & 31)) & 1;
}

}  // namespace

ExactAccumulator::Wide ExactAccumulator::ToWide() const {
  Mag mag;
  int top;
  const bool negative = Magnitude(mag, top);
  Wide w{negative, kMinExponent, 0, false};
  if (top < 0) return w;
  const int lead = LeadingBit(mag, top);
  const int start = std::max(0, lead - 127);
  w.exponent = kMinExponent + start;
  w.significand = uint128{Bits64(mag, start)} | (uint128{Bits64(mag, start + 64)} << 64);
  if (start > 0) {
    for (int i = 0; i < (start >> 5) && !w.sticky; ++i) w.sticky = mag[static_cast<size_t>(i)];
    const uint32_t below = (uint32_t{1} << (start & 31)) - 1;
    w.sticky = w.sticky || (mag[static_cast<size_t>(start >> 5)] & below) != 0;
  }
  return w;
}

bool ExactAccumulator::Invalid() const { return invalid_ || signaling_ || (pos_inf_ && neg_inf_); }

bool ExactAccumulator::IsZero() const {
  if (!IsFinite()) return false;
  Mag mag;
  int top;
  Magnitude(mag, top);
  return top < 0;
}

int ExactAccumulator::Sign() const {
  if (IsNan()) return 0;
  if (IsInf()) return neg_inf_ ? -1 : 1;
  Mag mag;
  int top;
  const bool negative = Magnitude(mag, top);
  if (top < 0) return 0;
  return negative ? -1 : 1;
}

bool ExactAccumulator::ZeroSign(Rounding rounding) const {
  if (!nonzero_term_ && term_signs_ == 2) return true;   // Only -0 terms.
  if (!nonzero_term_ && term_signs_ <= 1) return false;  // Only +0 terms, or none.
  return rounding == Rounding::kDownward;
}

OpResult ExactAccumulator::Round(const FormatSpec& target, const OpEnv& env) const {
  if (nan_) {
    const Flags flags = Invalid() ? kInvalid : 0;
    return {NanResultBits(target, env, nan_format_, &nan_value_), flags};
  }
  if (Invalid()) return {NanResultBits(target, env, nullptr, nullptr), kInvalid};
  if (pos_inf_ || neg_inf_) {
    const bool sign = neg_inf_;
    if (sign && !target.has_sign) return {NanResultBits(target, env, nullptr, nullptr), kInvalid};
    if (target.nonfinite == NonFinite::kIeee) return {InfBits(target, sign), 0};
    if (env.saturate) return {MaxFiniteBits(target, sign), 0};
    Unpacked signed_nan;
    signed_nan.kind = Kind::kNaN;
    signed_nan.sign = sign;
    return {NanResultBits(target, env, nullptr, &signed_nan), kInvalid};
  }
  const Wide w = ToWide();
  if (w.significand == 0) {
    return RoundPack(target, ZeroSign(env.rounding), 0, 0, false, env);
  }
  return RoundPack(target, w.sign, w.exponent, w.significand, w.sticky, env);
}

bool ExactAccumulator::IsExactIn(const FormatSpec& target) const {
  if (!IsFinite()) return false;
  OpEnv env;
  env.rounding = Rounding::kTowardZero;
  const OpResult r = Round(target, env);
  return (r.flags & (kInexact | kOverflow | kInvalid)) == 0;
}

void ExactAccumulator::ToMpfr(mpfr_t out, Rounding zero_rounding) const {
  if (IsNan()) {
    mpfr_set_prec(out, MPFR_PREC_MIN);
    mpfr_set_nan(out);
    return;
  }
  if (IsInf()) {
    mpfr_set_prec(out, MPFR_PREC_MIN);
    mpfr_set_inf(out, neg_inf_ ? -1 : 1);
    return;
  }
  Mag mag;
  int top;
  const bool negative = Magnitude(mag, top);
  if (top < 0) {
    mpfr_set_prec(out, MPFR_PREC_MIN);
    mpfr_set_zero(out, ZeroSign(zero_rounding) ? -1 : 1);
    return;
  }
  const int lead = LeadingBit(mag, top);
  const int trail = TrailingBit(mag);
  mpfr_set_prec(out, std::max<mpfr_prec_t>(MPFR_PREC_MIN, lead - trail + 1));
  const int first = trail >> 5;
  mpz_t z;
  mpz_init(z);
  mpz_import(z, static_cast<size_t>(top - first + 1), -1, sizeof(uint32_t), 0, 0,
             mag.data() + first);
  const int inexact = mpfr_set_z_2exp(out, z, kMinExponent + 32 * first, MPFR_RNDN);
  mpz_clear(z);
  if (inexact != 0) {
    std::fprintf(stderr, "exact_sum: ToMpfr lost bits\n");
    std::abort();
  }
  if (negative) mpfr_neg(out, out, MPFR_RNDN);
}

std::string ExactAccumulator::ToHexFloat(Rounding zero_rounding) const {
  if (IsNan()) return "nan";
  if (IsInf()) return neg_inf_ ? "-inf" : "inf";
  Mag mag;
  int top;
  const bool negative = Magnitude(mag, top);
  if (top < 0) return ZeroSign(zero_rounding) ? "-0x0p+0" : "0x0p+0";
  const int lead = LeadingBit(mag, top);
  const int trail = TrailingBit(mag);
  std::string s = negative ? "-0x1" : "0x1";
  if (trail < lead) {
    s += '.';
    for (int i = lead - 1; i >= trail; i -= 4) {
      unsigned digit = 0;
      for (int j = 0; j < 4; ++j) {
        digit <<= 1;
        if (i - j >= trail) digit |= BitAt(mag, i - j) ? 1 : 0;
      }
      s += "0123456789abcdef"[digit];
    }
  }
  const int e = lead + kMinExponent;
  s += e < 0 ? "p-" : "p+";
  s += std::to_string(e < 0 ? -e : e);
  return s;
}

ExactAccumulator ExactDot(const FormatSpec& fa, std::span<const uint64_t> a,
                          const FormatSpec& fb, std::span<const uint64_t> b,
                          std::optional<FormatValue> c) {
  ExactAccumulator acc;
  acc.AddDot(fa, a, fb, b);
  if (c.has_value()) acc.Add(*c->format, c->bits);
  return acc;
}

ExactAccumulator ExactSum(const FormatSpec& f, std::span<const uint64_t> x,
                          std::optional<FormatValue> c) {
  ExactAccumulator acc;
  acc.AddSum(f, x);
  if (c.has_value()) acc.Add(*c->format, c->bits);
  return acc;
}

}  // namespace fpconform
