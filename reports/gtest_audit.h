// GoogleTest assertions for C++ kernel tests: does a kernel's output conform to a platform
// model? The same audit as `fpconform audit` (reports/audit.h), and on failure the same evidence
// (AuditSummaryText: the torch.testing-shaped lines, class counts, the listed elements with their
// exact and emulated values, diagnoses, notes).
//
// Header only, so that it compiles against the test's own GoogleTest; link fpconform::gtest
// (CMake: fpconform::fpconform plus GTest::gtest). It lives in reports/ beside audit.h because it
// is a thin adapter of the audit verdict (reports/ holds "audit verdicts"): it prints nothing
// itself and holds no logic of its own; a failure message is returned in the AssertionResult.
//
//   #include "reports/gtest_audit.h"
//   TEST(MyKernel, MatmulConforms) {
//     fpconform::Tensor a = ..., b = ..., out = ...;   // e.g. fpconform::ReadTensor("a.npy", ...)
//     EXPECT_CONFORMS(out, a, b, "trainium2-bf16");    // out = a @ b on that platform
//     ASSERT_CONFORMS(out, a, b, "nvidia-h100-bf16", {.strict = true});
//     EXPECT_TRUE(fpconform::gtest::ConformsToPlatform(out, a, b, "trainium2-bf16"));
//     EXPECT_TRUE(fpconform::gtest::SumConformsToPlatform(y, x, -1, "numpy-sum-f32"));
//   }
// A tensor from bits in memory: Tensor t = *fpconform::MakeTensor("bfloat16", {m, k}); then
// t.SetBits(i, bits) (cases/tensor_file.h).
//
// Pass: the audit's verdict is pass (no element unexplained; with strict, none only within the
// tolerance). Fail: the verdict is fail (message: the platform, the counts and
// AuditSummaryText), or the audit could not run (message "fpconform audit error: ..." naming
// the bad shape, dtype or platform). Never throws, never aborts.
//
// Data: the model presets and the standard sweep file (for the tolerance rule) come from
// ConformsOptions, else $FPCONFORM_MODELS_DIR / $FPCONFORM_SWEEP_FILE, else the installed
// share/fpconform that fpconform::fpconform names (FPCONFORM_DEFAULT_DATA_DIR), else the source
// tree fpconform was built from (base/data_dir.h ResolveDataPath).
#ifndef FPCONFORM_REPORTS_GTEST_AUDIT_H_
#define FPCONFORM_REPORTS_GTEST_AUDIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "base/data_dir.h"
#include "cases/tensor_file.h"
#include "formats/op_env.h"
#include "gtest/gtest.h"
#include "reports/audit.h"

namespace fpconform::gtest {

// The `= {}` initializers keep designated initializers ({.strict = true}) free of GCC's
// -Wmissing-field-initializers.
struct ConformsOptions {
  std::string models_dir = {};  // Empty: $FPCONFORM_MODELS_DIR, else the installed presets.
  std::string sweep_file = {};  // Empty: $FPCONFORM_SWEEP_FILE, else the standard sweep.
  bool strict = false;          // within_tolerance fails too (`fpconform audit --strict`).
  bool tolerance = true;        // Run the tolerance rule (false: `--no-tolerance`, faster).
  int tolerance_samples = 200;  // Samples of the tolerance rule's sweep.
  int threads = 1;
  int max_listed = 20;                    // Elements listed in the failure message.
  const Tensor* c = nullptr;              // matmul: C added to the product (optional).
  bool transpose_a = false;               // matmul: `a` holds A^T.
  bool transpose_b = false;               // matmul: `b` holds B^T.
  std::optional<OpEnv> cast_inputs = {};  // How the kernel converted inputs of another dtype.
};

namespace internal {

inline reports::AuditOptions MakeAuditOptions(std::string_view platform, const ConformsOptions& o) {
  reports::AuditOptions a;
  a.platforms = {std::string(platform)};
#ifdef FPCONFORM_DEFAULT_DATA_DIR
  constexpr std::string_view installed = FPCONFORM_DEFAULT_DATA_DIR;
#else
  constexpr std::string_view installed;
#endif
  a.models_dir = ResolveDataPath(DataItem::kModels, o.models_dir, installed);
  a.sweep_file = ResolveDataPath(DataItem::kStandardSweep, o.sweep_file, installed);
  a.strict = o.strict;
  a.recommend = o.tolerance;
  a.tolerance_samples = o.tolerance_samples;
  a.threads = o.threads < 1 ? 1 : o.threads;
  a.max_listed = o.max_listed;
  return a;
}

inline ::testing::AssertionResult Verdict(const absl::StatusOr<reports::AuditResult>& r,
                                          std::string_view op, std::string_view platform) {
  if (!r.ok()) {
    return ::testing::AssertionFailure()
           << "fpconform audit error (" << op << ", platform " << platform << "): "
           << r.status().message();
  }
  const int64_t unexplained = r->counts[static_cast<int>(reports::AuditClass::kUnexplained)];
  const int64_t total = static_cast<int64_t>(r->classes.size());
  if (r->verdict == reports::AuditVerdict::kPass) {
    return ::testing::AssertionSuccess()
           << op << " output conforms to " << platform << " (" << total << " elements)";
  }
  return ::testing::AssertionFailure()
         << op << " output does not conform to " << platform << ": " << r->mismatched
         << " mismatched (" << unexplained << " unexplained) of " << total << " elements\n"
         << reports::AuditSummaryText(*r);
}

}  // namespace internal

// out = [C +] a @ b (batched as numpy.matmul) as `platform` computes it (reports::AuditMatmul).
inline ::testing::AssertionResult ConformsToPlatform(const Tensor& out, const Tensor& a,
                                                     const Tensor& b, std::string_view platform,
                                                     const ConformsOptions& options = {}) {
  const reports::AuditOptions o = internal::MakeAuditOptions(platform, options);
  reports::MatmulAuditInput in;
  in.a = &a;
  in.b = &b;
  in.out = &out;
  in.c = options.c;
  in.transpose_a = options.transpose_a;
  in.transpose_b = options.transpose_b;
  in.cast_inputs = options.cast_inputs;
  return internal::Verdict(reports::AuditMatmul(in, o), "matmul", platform);
}

// out = the sum of x along `axis` (negative counts from the end) (reports::AuditSum).
inline ::testing::AssertionResult SumConformsToPlatform(const Tensor& out, const Tensor& x,
                                                        int axis, std::string_view platform,
                                                        const ConformsOptions& options = {}) {
  const reports::AuditOptions o = internal::MakeAuditOptions(platform, options);
  reports::SumAuditInput in;
  in.x = &x;
  in.axis = axis;
  in.out = &out;
  in.cast_inputs = options.cast_inputs;
  return internal::Verdict(reports::AuditSum(in, o), "sum", platform);
}

}  // namespace fpconform::gtest

// EXPECT_CONFORMS(out, a, b, platform[, ConformsOptions]) / ASSERT_CONFORMS(...): matmul.
#define EXPECT_CONFORMS(out, a, b, platform, ...)                     \
  EXPECT_TRUE(::fpconform::gtest::ConformsToPlatform((out), (a), (b), \
                                                     (platform)__VA_OPT__(, ) __VA_ARGS__))
#define ASSERT_CONFORMS(out, a, b, platform, ...)                     \
  ASSERT_TRUE(::fpconform::gtest::ConformsToPlatform((out), (a), (b), \
                                                     (platform)__VA_OPT__(, ) __VA_ARGS__))

#endif  // FPCONFORM_REPORTS_GTEST_AUDIT_H_
