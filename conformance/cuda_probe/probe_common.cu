// The CUDA probe's shared host pieces (probe.h): input types, container bits, CUDA error checks,
// replay files.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "conformance/cuda_probe/probe.h"

namespace fpconform::cuda_probe {

const TypeInfo kTypes[kNumTypes] = {
    {"f16", "float16", "f16", 2, 5, 10, 15, false, 16},
    {"bf16", "bfloat16", "bf16", 2, 8, 7, 127, false, 16},
    {"tf32", "float32", "tf32", 4, 8, 23, 127, false, 8},  // fp32 bits; the unit reads tf32.
    {"e4m3", "float8_e4m3fn", "e4m3", 1, 4, 3, 7, true, 32},
    {"e5m2", "float8_e5m2", "e5m2", 1, 5, 2, 15, false, 32},
};

// The container bits of v in type t when v is exactly representable and finite; false otherwise.
bool EncodeExact(double v, const TypeInfo& t, uint32_t* bits) {
  const uint32_t sign = std::signbit(v) ? 1u : 0u;
  const int width = t.bytes * 8;
  const uint32_t sign_bit = sign << (width - 1);
  double m = std::fabs(v);
  if (m == 0) {
    *bits = sign_bit;
    return true;
  }
  if (!std::isfinite(m)) return false;
  const int emin = 1 - t.bias;
  int e = 0;
  const double f = std::frexp(m, &e);  // m = f * 2^e, f in [0.5, 1).
  int exp = e - 1;                      // m = (2f) * 2^exp, 2f in [1, 2).
  uint64_t biased, frac;
  if (exp >= emin) {
    const double scaled = std::ldexp(2 * f - 1, t.fraction_bits);
    if (scaled != std::floor(scaled)) return false;
    biased = static_cast<uint64_t>(exp + t.bias);
    frac = static_cast<uint64_t>(scaled);
  } else {
    const double scaled = std::ldexp(m, t.fraction_bits - emin);
    if (scaled != std::floor(scaled) || scaled >= std::ldexp(1.0, t.fraction_bits)) return false;
    biased = 0;
    frac = static_cast<uint64_t>(scaled);
  }
  const uint64_t max_biased = (1u << t.exponent_bits) - 1;
  if (t.e4m3fn) {
    if (biased > max_biased) return false;
    if (biased == max_biased && frac == (1u << t.fraction_bits) - 1) return false;
  } else if (biased >= max_biased) {
    return false;
  }
  *bits = sign_bit | static_cast<uint32_t>(biased << t.fraction_bits) | static_cast<uint32_t>(frac);
  return true;
}

// Random finite container bits: exponent in [bias + lo, bias + hi] clipped to the finite range.
uint32_t RandomBits(Rng& rng, const TypeInfo& t, int lo, int hi) {
  const int width = t.bytes * 8;
  const int max_biased = (1 << t.exponent_bits) - 1;
  for (;;) {
    int biased = t.bias + lo + static_cast<int>(rng.Below(static_cast<uint64_t>(hi - lo + 1)));
    if (biased < 0) biased = 0;
    if (biased > max_biased) biased = max_biased;
    const uint32_t frac = static_cast<uint32_t>(rng.Next() & ((1ull << t.fraction_bits) - 1));
    if (!t.e4m3fn && biased == max_biased) continue;
    if (t.e4m3fn && biased == max_biased && frac == (1u << t.fraction_bits) - 1) continue;
    const uint32_t sign = static_cast<uint32_t>(rng.Next() & 1);
    return (sign << (width - 1)) | (static_cast<uint32_t>(biased) << t.fraction_bits) | frac;
  }
}

// The value of finite container bits of type t (the inverse of EncodeExact).
double DecodeBits(const TypeInfo& t, uint32_t bits) {
  const int width = t.bytes * 8;
  const uint32_t frac = bits & ((1u << t.fraction_bits) - 1);
  const int biased = static_cast<int>((bits >> t.fraction_bits) & ((1u << t.exponent_bits) - 1));
  const double m = biased == 0 ? std::ldexp(frac, 1 - t.bias - t.fraction_bits)
                               : std::ldexp(frac + (1u << t.fraction_bits),
                                            biased - t.bias - t.fraction_bits);
  return (bits >> (width - 1)) & 1 ? -m : m;
}

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

bool CheckCuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return true;
  const char* base = std::strrchr(file, '/');  // The file name without its directory.
  std::fprintf(stderr, "%s:%d: %s: %s\n", base ? base + 1 : file, line, what,
               cudaGetErrorString(e));
  return false;
}

namespace {

std::string Hex(uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*x", digits, v);
  return buf;
}

std::string FileTag(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) out += ch;
    else if (ch >= 'A' && ch <= 'Z') out += static_cast<char>(ch - 'A' + 'a');
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

}  // namespace

bool WriteFile(const std::string& dir, const Device& dev, const FileSpec& spec,
               const std::vector<Dot>& dots, const std::vector<uint32_t>& d, uint64_t seed,
               const std::string& check) {
  const std::string path = dir + "/" + FileTag(dev.name) + "-sm" + std::to_string(dev.major) +
                           std::to_string(dev.minor) + "-" + spec.short_name + ".txt";
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  std::fprintf(f, "# fpconform-replay v1\n");
  std::fprintf(f, "# Recorded by conformance/cuda_probe/probe.cu (seed %llu).\n",
               static_cast<unsigned long long>(seed));
  std::fprintf(f, "device = %s\n", dev.name.c_str());
  std::fprintf(f, "sm = %d%d\n", dev.major, dev.minor);
  std::fprintf(f, "driver = %d\n", dev.driver);
  std::fprintf(f, "runtime = %d\n", dev.runtime);
  std::fprintf(f, "instruction = %s\n", spec.instruction.c_str());
  std::fprintf(f, "a-format = %s\n", spec.a_format.c_str());
  std::fprintf(f, "b-format = %s\n", spec.b_format.c_str());
  std::fprintf(f, "c-format = %s\n", spec.c_format.c_str());
  std::fprintf(f, "d-format = %s\n", spec.d_format.c_str());
  std::fprintf(f, "expect = %s\n", spec.expect.c_str());
  if (!spec.candidates.empty()) std::fprintf(f, "candidates = %s\n", spec.candidates.c_str());
  std::fprintf(f, "layout-check = %s\n", check.c_str());
  if (!spec.note.empty()) std::fprintf(f, "# %s\n", spec.note.c_str());
  std::string last_tag;
  for (size_t i = 0; i < d.size(); ++i) {
    const Dot& x = dots[i];
    if (x.tag != last_tag) {
      std::fprintf(f, "# %s\n", x.tag.c_str());
      last_tag = x.tag;
    }
    std::string line = std::to_string(x.a.size());
    for (uint32_t v : x.a) line += " " + Hex(v, spec.a_digits);
    for (uint32_t v : x.b) line += " " + Hex(v, spec.a_digits);
    line += " " + Hex(x.c, 8) + " " + Hex(d[i], 8);
    std::fprintf(f, "%s\n", line.c_str());
  }
  std::fclose(f);
  std::printf("wrote %s (%zu dots, layout-check %s)\n", path.c_str(), d.size(), check.c_str());
  return true;
}

}  // namespace fpconform::cuda_probe
