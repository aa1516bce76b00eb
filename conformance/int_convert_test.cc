// float -> int8 / uint8 / int32, exhaustively over every value of the 8- and 16-bit float
// formats (and a seeded sample of float32), every rounding mode, with and without sat, against
// an independent reference written with host double arithmetic (every value of these formats
// is exact in a double, and so is its rounding to an integer: std::trunc/floor/ceil/nearbyint).
//
// Reference rules (formats/ops.h): NaN -> v, 0 under sat, else the "integer indefinite" (most
// negative for signed formats, all ones for uint8); +-Inf and out-of-range results -> v, the
// clamped value under sat, else the indefinite; in range and inexact -> x.
#include <cstring>
#include <cmath>
#include <iostream>
#include <string>

#include "formats/ops.h"
#include "formats/text.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

double ReferenceRound(double v, Rounding mode) {
  switch (mode) {
    case Rounding::kNearestEven: {
      double r = std::floor(v);
      double diff = v - r;  // Exact: v and r are close doubles.
      if (diff > 0.5 || (diff == 0.5 && std::fmod(r, 2.0) != 0)) r += 1;
      return r;
    }
    case Rounding::kNearestAway: return std::round(v);  // Halves away from zero.
    case Rounding::kTowardZero: return std::trunc(v);
    case Rounding::kUpward: return std::ceil(v);
    case Rounding::kDownward: return std::floor(v);
    case Rounding::kToOdd: {
      double t = std::trunc(v);
      if (t != v && std::fmod(t, 2.0) == 0) t += v > 0 ? 1 : -1;
      return t;
    }
    case Rounding::kStochastic: break;
  }
  return NAN;
}

// The value of a float pattern as a double, via the text form (independent of UnpackBits'
// callers: ExactHexFloat prints the exact value, and strtod reads a hex-float exactly).
double ValueOf(const FormatSpec& f, uint64_t bits) {
  std::string s = ExactHexFloat(f, bits);
  if (s.find("nan") != std::string::npos) return NAN;
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  return std::strtod(s.c_str(), nullptr);
}

OpResult Reference(const FormatSpec& to, double v, Rounding mode, bool sat) {
  const double lo = static_cast<double>(IntegerMin(to)), hi = static_cast<double>(IntegerMax(to));
  const uint64_t mask = WidthMask(to);
  const uint64_t indefinite =
      to.is_signed ? static_cast<uint64_t>(IntegerMin(to)) & mask : mask;
  if (std::isnan(v)) return {sat ? 0 : indefinite, kInvalid};
  double r = std::isinf(v) ? v : ReferenceRound(v, mode);
  if (r < lo || r > hi) {
    if (!sat) return {indefinite, kInvalid};
    return {static_cast<uint64_t>(static_cast<int64_t>(r < lo ? lo : hi)) & mask, kInvalid};
  }
  return {static_cast<uint64_t>(static_cast<int64_t>(r)) & mask, r != v ? kInexact : Flags{0}};
}

constexpr Rounding kModes[] = {Rounding::kNearestEven, Rounding::kNearestAway,
                               Rounding::kTowardZero,  Rounding::kUpward,
                               Rounding::kDownward,    Rounding::kToOdd};

uint64_t CheckValue(const FormatSpec& from, uint64_t bits, int& failures) {
  const double v = ValueOf(from, bits);
  uint64_t n = 0;
  for (const FormatSpec* to : {&Int8(), &UInt8(), &Int32()}) {
    for (Rounding mode : kModes) {
      for (bool sat : {false, true}) {
        OpEnv env;
        env.rounding = mode;
        env.saturate = sat;
        OpResult got = Convert(from, *to, bits, env);
        OpResult want = Reference(*to, v, mode, sat);
        ++n;
        if (got != want && ++failures <= 10) {
          OpEnv named = env;
          ADD_FAILURE() << from.name << " -> " << to->name << " " << RoundingName(named)
                        << (sat ? ":sat" : "") << " input " << Describe(from, bits)
                        << " expected " << HexBits(*to, want.bits) << " "
                        << FlagsToString(want.flags) << " got " << HexBits(*to, got.bits) << " "
                        << FlagsToString(got.flags);
        }
      }
    }
  }
  return n;
}

TEST(IntConvertTest, EveryValueOfSmallFormats) {
  int failures = 0;
  uint64_t n = 0;
  for (const FormatSpec& f : AllFormats()) {
    if (!IsFloat(f) || f.width > 16) continue;
    for (uint64_t bits = 0; bits < (uint64_t{1} << f.width); ++bits) {
      n += CheckValue(f, bits, failures);
    }
  }
  std::cout << "[ cases    ] " << n << " float->integer conversions checked\n";
}

TEST(IntConvertTest, Float32Sample) {
  int failures = 0;
  uint64_t n = 0;
  // Every 65,537th pattern, plus the neighbourhoods of the integer-format limits.
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 65537) n += CheckValue(Float32(), bits, failures);
  for (float edge : {127.0f, 128.0f, -128.0f, -129.0f, 255.0f, 256.0f, 2147483648.0f,
                     -2147483648.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f}) {
    uint32_t b;
    std::memcpy(&b, &edge, 4);
    for (int32_t d = -64; d <= 64; ++d) n += CheckValue(Float32(), (b + static_cast<uint32_t>(d)), failures);
  }
  std::cout << "[ cases    ] " << n << " float32->integer conversions checked\n";
}

}  // namespace
}  // namespace fpconform
