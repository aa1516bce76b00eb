// libFuzzer harness for model and envelope files (model.h): the input bytes are a TOML file,
// given to ParseModel, ParseEnvelope and IsEnvelopeText. A bad file must give InvalidArgument
// whose message starts with the file name (DESIGN.md: errors name the file, line and field),
// never a crash, a throw or an abort.
//
// When the bytes parse as a model, a small dot product and sum (n <= 40, or one of a few longer
// lengths that cross a fused group or block boundary) are evaluated under it, with operands drawn
// from a hash of the input, and cross-checked: EvaluateDot (which may take the fast paths of
// fast_eval.h) against GenericEvaluateDot, bits and bound identical; the same for sums; and a
// 2 x 2 EvaluateMatmul against its four dots. The result must fit the output container. A model
// with per-block scales (epilogue.scale = "block") also runs EvaluateBlockScaledDot with unit
// scales (the unscaled dot's bits) and a 2 x 2 EvaluateBlockScaledMatmul with random scales
// against its four block-scaled dots.
//
//   build-fuzz/accumulation/model_fuzzer accumulation/testdata/fuzz/model_fuzzer
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "base/testing/fuzz_checks.h"
#include "cases/pinned_random.h"
#include "formats/format_spec.h"

namespace fpconform {
namespace {

constexpr std::string_view kModelFile = "fuzz_model";
constexpr std::string_view kEnvelopeFile = "fuzz_envelope";

[[noreturn]] void Fail(const std::string& what, std::string_view input) {
  fuzz::FailOnInput("model_fuzzer", what, input);
}

void CheckError(const absl::Status& s, std::string_view file, std::string_view input) {
  fuzz::CheckFileError("model_fuzzer", s, file, input);
}

// Operands from a PinnedRng (SplitMix64) seeded with the input's hash, so a mutation of the model
// text also moves them.
// A uniformly random bit pattern of `f`'s container (pad bits zero: tfloat32).
uint64_t RandomBits(const FormatSpec& f, PinnedRng& rng) {
  uint64_t bits = rng.Next();
  if (f.width < 64) bits &= (uint64_t{1} << f.width) - 1;
  if (f.pad_bits > 0) bits &= ~((uint64_t{1} << f.pad_bits) - 1);
  return bits;
}

bool SameResult(const absl::StatusOr<EvalResult>& x, const absl::StatusOr<EvalResult>& y) {
  if (x.ok() != y.ok()) return false;
  if (!x.ok()) return x.status() == y.status();
  // Bounds compare as bits: both paths must do the same double operations (fast_eval.h).
  return x->bits == y->bits && std::memcmp(&x->bound, &y->bound, sizeof(double)) == 0;
}

std::string Describe(const absl::StatusOr<EvalResult>& r) {
  if (!r.ok()) return r.status().ToString();
  char buf[64];
  std::snprintf(buf, sizeof buf, "bits 0x%llx bound %a", static_cast<unsigned long long>(r->bits),
                r->bound);
  return buf;
}

void CheckFits(const Model& m, const absl::StatusOr<EvalResult>& r, std::string_view input) {
  if (!r.ok() || m.output.format->width >= 64) return;
  if (r->bits >> m.output.format->width != 0) {
    Fail("result does not fit the output container: " + Describe(r), input);
  }
}

void Evaluate(const Model& m, uint64_t seed, std::string_view input) {
  PinnedRng rng(seed);
  static constexpr int64_t kLongLengths[] = {64, 129, 257, 300};
  const uint64_t pick = rng.Next();
  const int64_t n = pick % 8 == 0 ? kLongLengths[(pick >> 3) % 4] : static_cast<int64_t>(pick % 41);
  const FormatSpec& fa = *m.inputs.a;
  const FormatSpec& fb = m.inputs.b != nullptr ? *m.inputs.b : fa;
  const FormatSpec& fc = m.FinalAccumulatorFormat();
  std::vector<uint64_t> a(static_cast<size_t>(2 * n)), b(static_cast<size_t>(2 * n));
  for (uint64_t& x : a) x = RandomBits(fa, rng);
  for (uint64_t& x : b) x = RandomBits(fb, rng);
  const uint64_t c = rng.Next() % 4 == 0 ? RandomBits(fc, rng) : 0;
  const std::span<const uint64_t> a0(a.data(), static_cast<size_t>(n));
  const std::span<const uint64_t> b0(b.data(), static_cast<size_t>(n));
  EvalOptions options;
  options.seed = rng.Next() % 3;

  if (m.op_dot) {
    const absl::StatusOr<EvalResult> dot = EvaluateDot(m, a0, b0, c, options);
    const absl::StatusOr<EvalResult> generic = GenericEvaluateDot(m, a0, b0, c, options);
    if (!SameResult(dot, generic)) {
      Fail("EvaluateDot " + Describe(dot) + " != GenericEvaluateDot " + Describe(generic) +
               " (n " + std::to_string(n) + ")",
           input);
    }
    CheckFits(m, dot, input);
  }
  if (m.op_sum) {
    const absl::StatusOr<EvalResult> sum = EvaluateSum(m, a0, c, options);
    const absl::StatusOr<EvalResult> generic = GenericEvaluateSum(m, a0, c, options);
    if (!SameResult(sum, generic)) {
      Fail("EvaluateSum " + Describe(sum) + " != GenericEvaluateSum " + Describe(generic) +
               " (n " + std::to_string(n) + ")",
           input);
    }
    CheckFits(m, sum, input);
  }
  if (m.op_matmul && n > 0 && n <= 40) {
    // A (2 x n, row-major) and B (n x 2, column-major): row i of A is a[i*n ..], column j of
    // B is b[j*n ..]; C all zero.
    std::vector<uint64_t> d(4);
    std::vector<double> bounds(4);
    const absl::Status s = EvaluateMatmul(m, 2, 2, static_cast<int>(n), a, Layout::kRowMajor, b,
                                          Layout::kColumnMajor, {}, d, bounds, options);
    if (!s.ok()) Fail("EvaluateMatmul: " + s.ToString(), input);
    const size_t len = static_cast<size_t>(n);
    for (size_t i = 0; i < 2; ++i) {
      for (size_t j = 0; j < 2; ++j) {
        const absl::StatusOr<EvalResult> e =
            GenericEvaluateDot(m, std::span<const uint64_t>(a).subspan(i * len, len),
                               std::span<const uint64_t>(b).subspan(j * len, len), 0, options);
        const size_t at = 2 * i + j;
        if (!e.ok() || e->bits != d[at] ||
            std::memcmp(&e->bound, &bounds[at], sizeof(double)) != 0) {
          Fail("EvaluateMatmul element (" + std::to_string(i) + ", " + std::to_string(j) +
                   ") != its dot " + Describe(e),
               input);
        }
      }
    }
  }
  if (m.epilogue.scale == EpilogueScale::kBlock && m.adder.kind != AdderKind::kInteger && n > 0 && n <= 300) {
    // Per-block scales: with every scale 1 the unscaled dot's bits; random scales (powers of two
    // for "products") give a result that fits its container; the 2 x 2 block-scaled matmul is
    // its four block-scaled dots, bit for bit.
    const size_t len = static_cast<size_t>(n);
    const size_t kb = (len + static_cast<size_t>(m.epilogue.scale_block) - 1) /
                      static_cast<size_t>(m.epilogue.scale_block);
    const std::vector<double> ones(kb, 1.0);
    const absl::StatusOr<EvalResult> unit = EvaluateBlockScaledDot(m, a0, b0, {ones, ones}, c, options);
    const absl::StatusOr<EvalResult> plain = GenericEvaluateDot(m, a0, b0, c, options);
    // mul_add rounds each partial sum into chain.format: exact only for accumulators that fit.
    const FormatSpec& acc = *m.accumulator.format;
    const FormatSpec* promote = m.chain.promote_format;
    const bool unit_exact = m.epilogue.block_apply != BlockApply::kMulAdd ||
                            (promote != nullptr && acc.fraction_bits <= promote->fraction_bits &&
                             Emax(acc) <= Emax(*promote) &&
                             MinSubnormalExponent(acc) >= MinSubnormalExponent(*promote));
    if (!unit.ok() || !plain.ok() || (unit_exact && unit->bits != plain->bits)) {
      Fail("EvaluateBlockScaledDot with unit scales " + Describe(unit) + " != GenericEvaluateDot " +
               Describe(plain),
           input);
    }
    const bool pow2 = m.epilogue.block_apply == BlockApply::kProducts;
    auto scale = [&] {
      const int e = static_cast<int>(rng.Next() % 41) - 20;
      return pow2 ? std::ldexp(1.0, e)
                  : static_cast<double>(static_cast<float>(std::ldexp(1 + static_cast<double>(rng.Next() >> 11) * 0x1p-53, e)));
    };
    std::vector<double> sa(2 * kb), sbt(2 * kb);
    for (double& x : sa) x = scale();
    for (double& x : sbt) x = scale();
    std::vector<uint64_t> d(4);
    std::vector<double> bounds(4);
    const absl::Status s = EvaluateBlockScaledMatmul(m, 2, 2, static_cast<int>(n), a, Layout::kRowMajor, b,
                                                     Layout::kColumnMajor, sa, sbt, {}, d, bounds, options);
    if (!s.ok()) Fail("EvaluateBlockScaledMatmul: " + s.ToString(), input);
    for (size_t i = 0; i < 2; ++i) {
      for (size_t j = 0; j < 2; ++j) {
        const BlockScales bs{std::span<const double>(sa).subspan(i * kb, kb),
                             std::span<const double>(sbt).subspan(j * kb, kb)};
        const absl::StatusOr<EvalResult> e =
            EvaluateBlockScaledDot(m, std::span<const uint64_t>(a).subspan(i * len, len),
                                   std::span<const uint64_t>(b).subspan(j * len, len), bs, 0, options);
        CheckFits(m, e, input);
        if (!e.ok() || e->bits != d[2 * i + j]) {
          Fail("EvaluateBlockScaledMatmul element (" + std::to_string(i) + ", " + std::to_string(j) +
                   ") != its block-scaled dot " + Describe(e),
               input);
        }
      }
    }
  }
}

}  // namespace
}  // namespace fpconform

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fpconform;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  const bool is_envelope = IsEnvelopeText(input);
  const absl::StatusOr<Envelope> envelope = ParseEnvelope(input, kEnvelopeFile);
  CheckError(envelope.status(), kEnvelopeFile, input);
  if (envelope.ok() && !is_envelope) Fail("ParseEnvelope accepted a non-envelope text", input);
  if (envelope.ok() && envelope->members.size() < 2) Fail("envelope with < 2 members", input);

  const absl::StatusOr<Model> model = ParseModel(input, kModelFile);
  CheckError(model.status(), kModelFile, input);
  if (!model.ok()) return 0;
  if (model->inputs.a == nullptr || model->accumulator.format == nullptr ||
      model->output.format == nullptr) {
    Fail("parsed model lacks a format", input);
  }
  uint64_t seed = 0xcbf29ce484222325u;  // FNV-1a of the text.
  for (const char ch : input) seed = (seed ^ static_cast<uint8_t>(ch)) * 0x100000001b3u;
  Evaluate(*model, seed, input);
  return 0;
}
