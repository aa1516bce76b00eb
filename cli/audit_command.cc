// `fpconform audit matmul|sum|cast|elementwise|<axis op>` and `fpconform compare <op>`: read the
// user's tensor files (cases/tensor_file.h), run the audit (reports/audit.h), print the summary,
// and write --json / --report. Exit: 0 pass, 1 fail (an unexplained element, or a failed SR rate check), 2 bad
// input.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/output_file.h"
#include "base/str_cat.h"
#include "cases/tensor_file.h"
#include "cli/commands.h"
#include "cli/data_dir.h"
#include "formats/op_env.h"
#include "reports/audit.h"
#include "reports/process.h"
#include "reports/report.h"

namespace fpconform::cli {
namespace {

void AddTensorOption(CLI::App* app, TensorArg& t, const std::string& what) {
  app->add_option("--" + t.name, t.file, what + " (.npy, .safetensors[:NAME] or raw .bin)");
  app->add_option("--" + t.name + "-dtype", t.dtype,
                  "dtype of --" + t.name + " where the file cannot say (ml_dtypes name: "
                  "bfloat16, float8_e4m3fn, float8_e4m3, ...)");
  app->add_option("--" + t.name + "-shape", t.shape,
                  "shape of a raw --" + t.name + " file, row-major (e.g. 64,128)");
}

absl::StatusOr<std::vector<int64_t>> ParseShape(const std::string& text, const std::string& option) {
  std::vector<int64_t> shape;
  if (text.empty()) return shape;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < 0) {
      return absl::InvalidArgumentError(Cat(option, ": '", text, "' is not a shape like 64,128"));
    }
    shape.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return shape;
}

absl::StatusOr<Tensor> LoadTensor(const TensorArg& t) {
  TensorReadOptions o;
  o.dtype = t.dtype;
  o.option_name = "--" + t.name + "-dtype";
  absl::StatusOr<std::vector<int64_t>> shape = ParseShape(t.shape, "--" + t.name + "-shape");
  if (!shape.ok()) return shape.status();
  o.shape = *shape;
  return ReadTensor(t.file, o);
}

bool ParseDouble(const std::string& s, double& v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// An optional tensor option (--c, --weight, --bias, --mask, --lse, --lse-ref): when given, loaded
// into `t` with *dest pointed at it; else *dest is left as it is (nullptr).
absl::Status LoadOptional(const TensorArg& arg, std::optional<Tensor>& t, const Tensor*& dest) {
  if (arg.file.empty()) return absl::OkStatus();
  absl::StatusOr<Tensor> loaded = LoadTensor(arg);
  if (!loaded.ok()) return loaded.status();
  t = *std::move(loaded);
  dest = &*t;
  return absl::OkStatus();
}

// An optional number option (--eps, --scale) into `dest` when given: "<option> '<text>': not a
// number" when it is not one.
absl::Status ParseOptional(const std::string& text, const char* option,
                           std::optional<double>& dest) {
  if (text.empty()) return absl::OkStatus();
  double v = 0;
  if (!ParseDouble(text, v)) {
    return absl::InvalidArgumentError(Cat(option, " '", text, "': not a number"));
  }
  dest = v;
  return absl::OkStatus();
}

// --scale-a S: a number, or a tensor file (scalar, per-row or per-column vector).
absl::StatusOr<std::optional<Tensor>> LoadScale(const TensorArg& t) {
  if (t.file.empty()) return std::optional<Tensor>();
  double v = 0;
  if (ParseDouble(t.file, v)) {
    absl::StatusOr<Tensor> s = MakeTensor("float64", {});
    if (!s.ok()) return s.status();
    s->SetBits(0, std::bit_cast<uint64_t>(v));
    s->source = Cat("--", t.name, " ", t.file);
    return std::optional<Tensor>(*std::move(s));
  }
  absl::StatusOr<Tensor> s = LoadTensor(t);
  if (!s.ok()) return s.status();
  return std::optional<Tensor>(*std::move(s));
}

absl::StatusOr<OpEnv> ParseMode(const std::string& text, const std::string& option) {
  OpEnv env;
  std::string mode = text;
  const size_t colon = mode.find(':');
  if (colon != std::string::npos) {
    if (mode.substr(colon + 1) != "sat") {
      return absl::InvalidArgumentError(Cat(option, ": '", text, "': the only option is :sat"));
    }
    env.saturate = true;
    mode = mode.substr(0, colon);
  }
  if (!ParseRounding(mode, env)) {
    return absl::InvalidArgumentError(
        Cat(option, ": '", text, "' is not a rounding mode (rne rna rtz rup rdn rto sr<k>)"));
  }
  return env;
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size() && !s.empty()) {
    const size_t c = s.find(',', pos);
    std::string item = s.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
    if (!item.empty()) out.push_back(item);
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  return out;
}

// Writes `text` to `path`: "-" is standard output; an existing device or FIFO (/dev/null,
// /dev/stdout) is written in place; a regular file (or a new path) is replaced atomically
// through a temporary sibling, never left partial; a directory is refused.
absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return absl::OkStatus();
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return absl::InvalidArgumentError(Cat(path, ": is a directory"));
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) {
      const int err = errno;
      return absl::InvalidArgumentError(Cat(path, ": cannot open for writing: ", std::strerror(err)));
    }
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    return absl::OkStatus();
  }
  // A symlink to a regular file: replace the target, keep the link.
  char resolved[PATH_MAX];
  const std::string target = ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
  return WriteFileAtomically(target, {text});
}

void AddCommon(CLI::App* app, AuditCommonOptions& c, bool with_platform) {
  if (with_platform) {
    app->add_option("--platform", c.platform,
                    "Platform model(s) or envelope (comma list; see `fpconform models`), or auto: "
                    "every preset whose input formats are the tensors'");
  }
  app->add_option("--cast-inputs", c.cast_inputs,
                  "How the kernel converted inputs whose dtype is not the platform's (rne, rtz, "
                  "...[:sat]); without it such inputs are an error");
  app->add_option("--out-rounding", c.out_rounding,
                  "Rounding of the platform's output into the output file's dtype (default rne)");
  app->add_option("--json", c.json, "Write the audit as JSON (schema: reports/AUDIT.md); - for stdout");
  app->add_option("--report", c.report,
                  "Write a report directory (report.md, elements.csv, report.json, report.html), "
                  "replaced atomically");
  app->add_option("--max-listed", c.max_listed, "Elements listed (every unexplained first)")
      ->check(CLI::Range(0, 1000000));
  app->add_flag("--strict", c.strict, "Elements only within the recommended tolerance fail too");
  app->add_flag("--no-tolerance", c.no_tolerance,
                "Skip the tolerance rule (no within_tolerance class; faster)");
  app->add_option("--tolerance-samples", c.tolerance_samples,
                  "Samples of the tolerance rule's sweep (default 200)")
      ->check(CLI::Range(8, 100000));
  app->add_option("--threads", c.threads, "Worker threads (default: all cores); results do not depend on it")
      ->check(CLI::Range(1, 1024));
  app->add_option("--models-dir", c.models_dir, "Directory of model files");
  app->add_option("--sweep", c.sweep, "Sweep file for the tolerance rule's parameters "
                                      "(default: $FPCONFORM_SWEEP_FILE, else reports/standard_sweep.toml)");
  app->add_option("--progress", c.progress, "Progress on stderr: auto, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
}

absl::StatusOr<reports::AuditOptions> MakeOptions(const AuditCommonOptions& c, const std::string& platforms) {
  reports::AuditOptions o;
  o.platforms = SplitComma(platforms);
  o.models_dir = DataPath(DataItem::kModels, c.models_dir);
  o.sweep_file = DataPath(DataItem::kStandardSweep, c.sweep);
  o.max_listed = c.max_listed;
  o.strict = c.strict;
  o.all_unexplained = !c.report.empty();
  o.recommend = !c.no_tolerance;
  o.tolerance_samples = c.tolerance_samples;
  o.cancelled = [] { return reports::InterruptGuard::Interrupted(); };
  o.threads = c.threads > 0 ? c.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (ShowProgress(c.progress)) {
    const auto start = std::chrono::steady_clock::now();
    o.progress = [start](int64_t done, int64_t total, const std::string& label) {
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\r\033[K[%lld/%lld] %s  %.0fs", static_cast<long long>(done),
                   static_cast<long long>(total), label.c_str(), el);
      if (done == total) std::fputc('\n', stderr);
      std::fflush(stderr);
    };
  }
  return o;
}

int Fail(const char* cmd, const absl::Status& s) {
  std::fprintf(stderr, "fpconform %s: %s\n", cmd, std::string(s.message()).c_str());
  return kExitUsage;
}

// Checks the output paths before any work (a bad --report is reported before the audit runs).
absl::Status CheckOutputs(const AuditCommonOptions& c) {
  if (!c.report.empty()) {
    if (absl::Status s = reports::CheckOutputDirectory(c.report); !s.ok()) return s;
  }
  if (!c.json.empty() && c.json != "-") {
    struct stat st;
    if (::stat(c.json.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(Cat("--json ", c.json, ": is a directory"));
    }
  }
  return absl::OkStatus();
}

int Emit(const char* cmd, const AuditCommonOptions& c, const std::string& summary, const std::string& json,
         const std::vector<std::pair<std::string, std::string>>& files, bool pass) {
  std::fputs(summary.c_str(), stdout);
  std::fflush(stdout);
  if (!c.json.empty()) {
    if (absl::Status s = WriteTextFile(c.json, json); !s.ok()) return Fail(cmd, s);
  }
  if (!c.report.empty()) {
    if (absl::Status s = reports::WriteDirectoryAtomically(c.report, "audit", files); !s.ok()) {
      return Fail(cmd, s);
    }
    std::fprintf(stderr, "fpconform %s: report -> %s/\n", cmd, c.report.c_str());
  }
  return pass ? kExitOk : kExitBadLines;
}

// The fit (reports/AUDIT.md "Fit") of audit matmul and sum: --fit-out FILE runs it and writes
// the fitted model to FILE, a new path (refused when it exists, before the audit and again before
// writing), atomically; --no-fit turns off the one --platform auto runs.
void AddFitOptions(CLI::App* app, AuditCommandState& s) {
  app->add_option("--fit-out", s.fit_out,
                  "Write the fitted model (reports/AUDIT.md \"Fit\") to this new file (must not "
                  "exist); runs the fit even when a preset reproduces every element");
  app->add_flag("--no-fit", s.no_fit,
                "Skip the fit that --platform auto runs when no preset reproduces every element "
                "bit for bit");
}

absl::Status PrepareFit(const AuditCommandState& s, reports::AuditOptions& o) {
  if (!s.fit_out.empty()) {
    if (s.no_fit) return absl::InvalidArgumentError("--fit-out and --no-fit exclude each other");
    struct stat st;
    if (::lstat(s.fit_out.c_str(), &st) == 0) {
      return absl::InvalidArgumentError(Cat("--fit-out ", s.fit_out, ": exists (give a new file name)"));
    }
  }
  o.fit = s.no_fit ? reports::AuditOptions::Fit::kOff
          : s.fit_out.empty() ? reports::AuditOptions::Fit::kAuto
                              : reports::AuditOptions::Fit::kOn;
  return absl::OkStatus();
}

absl::Status WriteFit(const char* cmd, const AuditCommandState& s, const reports::AuditResult& r) {
  if (s.fit_out.empty()) return absl::OkStatus();
  if (!r.fit.run) return absl::InvalidArgumentError(Cat("--fit-out: the fit did not run: ", r.fit.skipped));
  struct stat st;
  if (::lstat(s.fit_out.c_str(), &st) == 0) {
    return absl::InvalidArgumentError(
        Cat("--fit-out ", s.fit_out, ": appeared during the audit (not replaced)"));
  }
  if (absl::Status ws = WriteFileAtomically(s.fit_out, {r.fit.model_text}); !ws.ok()) return ws;
  std::fprintf(stderr, "fpconform %s: fitted model -> %s\n", cmd, s.fit_out.c_str());
  return absl::OkStatus();
}

}  // namespace

namespace {

constexpr std::array<const char*, 4> kAxisOpNames = {"softmax", "log_softmax", "rmsnorm", "layernorm"};
constexpr std::array<const char*, 4> kAxisOpWhat = {
    "out = softmax(X) along --axis", "out = log_softmax(X) along --axis",
    "out = X * w / sqrt(mean(X^2) + eps) along --axis",
    "out = (X - mean) / sqrt(var + eps) * w + b along --axis (biased variance)"};

// --q, --k, --v, --mask, --causal, --scale of audit and compare attention.
void AddAttentionInputs(CLI::App* sub, AuditCommandState& s) {
  AddTensorOption(sub, s.q, "Q: (S_q, D), (H, S_q, D) or (B, H, S_q, D)");
  AddTensorOption(sub, s.k, "K: (S_k, D) ... with H_kv heads (H a multiple of H_kv: GQA)");
  AddTensorOption(sub, s.v, "V: (S_k, D_v) ... as K");
  AddTensorOption(sub, s.mask,
                  "Optional mask broadcasting to (B, H, S_q, S_k): float = added to the scores "
                  "(-inf masks), uint8/int8 = boolean (non-zero attends)");
  sub->add_flag("--causal", s.causal, "Causal mask, top-left aligned (key j <= query i), as PyTorch's is_causal");
  sub->add_option("--scale", s.attention_scale, "The kernel's softmax scale (default 1/sqrt(D), exactly)");
}

// --axis, and for the norms --weight, --bias (layernorm) and --eps, of axis op i.
void AddAxisOpOptions(CLI::App* sub, size_t i, AuditCommandState& s) {
  sub->add_option("--axis", s.axis, "The axis (negative counts from the end; default -1)");
  if (i >= 2) {
    AddTensorOption(sub, s.weight, "The weight (1-D, the axis's length), optional");
    if (i == 3) AddTensorOption(sub, s.bias, "The bias (1-D, the axis's length), optional");
    sub->add_option("--eps", s.eps, "The kernel's epsilon (> 0), e.g. 1e-6")->required();
  }
}

// --out-ref, --platform-ref (`ref_what` of --out-ref) and --out of a compare subcommand.
void AddCompareOutputs(CLI::App* sub, AuditCommandState& s, const char* ref_what) {
  AddTensorOption(sub, s.out_ref, "The reference platform's output (e.g. the GPU's)");
  sub->add_option("--platform-ref", s.platform_ref, Cat(ref_what, " of --out-ref"))->required();
  AddTensorOption(sub, s.out, "The port's output (e.g. NKI's)");
}

// `fpconform compare <op>`: `port` holds the inputs and --out; the reference side is the same
// with --out-ref.
template <class Input, class CompareFn>
int RunCompare(const AuditCommandState& s, const Input& port, const reports::AuditOptions& options,
               CompareFn compare) {
  const char* cmd = "compare";
  const AuditCommonOptions& c = s.common;
  if (c.platform.empty()) return Fail(cmd, absl::InvalidArgumentError("--platform is required"));
  if (s.out_ref.file.empty()) return Fail(cmd, absl::InvalidArgumentError("--out-ref is required"));
  absl::StatusOr<Tensor> out_ref = LoadTensor(s.out_ref);
  if (!out_ref.ok()) return Fail(cmd, out_ref.status());
  Input ref = port;
  ref.out = &*out_ref;
  absl::StatusOr<reports::CompareResult> cr = compare(ref, s.platform_ref, port, c.platform, options);
  if (!cr.ok()) return Fail(cmd, cr.status());
  return Emit(cmd, c, reports::CompareSummaryText(*cr), reports::CompareToJson(*cr),
              reports::AuditReportFiles(cr->port), cr->verdict == reports::AuditVerdict::kPass);
}

bool Parsed(const CLI::App* app) { return app != nullptr && app->parsed(); }

}  // namespace

static int RunAudit(const AuditCommandState& s);

CLI::App* AddAuditCommand(CLI::App& root, AuditCommandState& s) {
  CLI::App* app = root.add_subcommand(
      "audit", "Audit a kernel's outputs against a platform model: per element identical, "
               "within the model's bound, within the recommended tolerance, or unexplained");
  app->require_subcommand(1);
  app->footer(
      "Examples:\n"
      "  fpconform audit matmul --a a.npy --a-dtype bfloat16 --b b.npy --b-dtype bfloat16 \\\n"
      "      --out c.npy --platform trainium2-bf16\n"
      "  fpconform audit matmul --a w.safetensors:a --b w.safetensors:b --out out.npy --platform auto\n"
      "  # auto also fits a model beyond the presets (split-K slices, ...) and can write it:\n"
      "  fpconform audit matmul --a a.npy --b b.npy --out c.npy --platform auto --fit-out fit.toml\n"
      "  # DeepSeek-V3-style FP8 GEMM, one scale per (row, 128 K) of A and per (128 K, column) of B:\n"
      "  fpconform audit matmul --a a.npy --b b.npy --out d.npy --scale-a sa.npy --scale-b sb.npy \\\n"
      "      --platform nvidia-h100-fp8e4m3-deepgemm\n"
      "  fpconform audit sum --x x.npy --axis -1 --out y.npy --platform numpy-sum-f32 --json audit.json\n"
      "  fpconform audit cast --x x.npy --out q.npy --out-dtype float8_e4m3fn --to float8_e4m3fn:sat \\\n"
      "      --rounding rne --scale 0.25\n"
      "Exit status: 0 pass, 1 an element is unexplained, 2 bad input. JSON schema: reports/AUDIT.md.");

  s.matmul = app->add_subcommand("matmul", "out = [C +] A @ B (batched: numpy.matmul broadcasting)");
  AddTensorOption(s.matmul, s.a, "A (m x k; k x m with --transpose-a)");
  AddTensorOption(s.matmul, s.b, "B (k x n; n x k with --transpose-b)");
  AddTensorOption(s.matmul, s.out, "The kernel's output (m x n)");
  AddTensorOption(s.matmul, s.c, "C added to the product (m x n), optional");
  AddTensorOption(s.matmul, s.scale_a,
                  "FP8/INT8 scale of A: a number or a file (1 or m values; m x ceil(K/B) for a "
                  "platform with per-block scales, B its epilogue.scale_block)");
  AddTensorOption(s.matmul, s.scale_b,
                  "FP8/INT8 scale of B: a number or a file (1 or n values; ceil(K/B) x n for a "
                  "platform with per-block scales)");
  s.matmul->add_flag("--transpose-a", s.transpose_a, "The A file holds A^T (k x m)");
  s.matmul->add_flag("--transpose-b", s.transpose_b, "The B file holds B^T (n x k)");
  AddCommon(s.matmul, s.common, true);
  AddFitOptions(s.matmul, s);

  s.sum = app->add_subcommand("sum", "out = the sum of X along one axis");
  AddTensorOption(s.sum, s.x, "X");
  AddTensorOption(s.sum, s.out, "The kernel's output");
  s.sum->add_option("--axis", s.axis, "Axis summed (negative counts from the end; default -1)");
  AddCommon(s.sum, s.common, true);
  AddFitOptions(s.sum, s);

  s.elementwise = app->add_subcommand(
      "elementwise", "out = FN(X) elementwise: exp exp2 log tanh sigmoid silu gelu gelu_tanh rsqrt "
                     "reciprocal, against elementwise implementation models (composite/models/)");
  AddTensorOption(s.elementwise, s.x, "X");
  AddTensorOption(s.elementwise, s.out, "The kernel's output (X's shape)");
  s.elementwise->add_option("--fn", s.fn, "The function: exp exp2 log tanh sigmoid silu gelu "
                                          "gelu_tanh rsqrt reciprocal")->required();
  AddCommon(s.elementwise, s.common, true);
  s.elementwise->footer(
      "--models-dir names the directory of elementwise models (default: $FPCONFORM_COMPOSITE_MODELS_DIR,\n"
      "else the presets).\n"
      "Example:\n"
      "  fpconform audit elementwise --fn gelu --x x.npy --x-dtype bfloat16 --out y.npy \\\n"
      "      --out-dtype bfloat16 --platform torch-cuda-bf16 --json audit.json");

  for (size_t i = 0; i < kAxisOpNames.size(); ++i) {
    CLI::App* sub = app->add_subcommand(kAxisOpNames[i], Cat(kAxisOpWhat[i], ", against axis models (composite/models/)"));
    s.axis_ops[i] = sub;
    AddTensorOption(sub, s.x, "X");
    AddTensorOption(sub, s.out, "The kernel's output (X's shape)");
    AddAxisOpOptions(sub, i, s);
    AddCommon(sub, s.common, true);
    sub->footer(Cat("--models-dir names the directory of composite models (default: $FPCONFORM_COMPOSITE_MODELS_DIR,\n"
                    "else the presets).\n",
                    "Example:\n  fpconform audit ", kAxisOpNames[i], " --x x.npy --x-dtype bfloat16",
                    i >= 2 ? " --weight w.npy --weight-dtype bfloat16 --eps 1e-6" : "",
                    " --axis -1 \\\n      --out y.npy --out-dtype bfloat16 --platform auto --json audit.json"));
  }

  s.attention = app->add_subcommand(
      "attention", "out = softmax(scale Q K^T + mask) V per head, against correctly-rounded and the "
                   "attention models (composite/attention_models/)");
  AddAttentionInputs(s.attention, s);
  AddTensorOption(s.attention, s.out, "The kernel's output: Q's shape with D_v last");
  AddTensorOption(s.attention, s.lse,
                  "Optional: the kernel's LSE (float), Q's shape without D: (S_q), (H, S_q) or (B, H, S_q)");
  AddCommon(s.attention, s.common, true);
  s.attention->footer(
      "Platforms: correctly-rounded, the attention models (--models-dir names their directory; default:\n"
      "$FPCONFORM_ATTENTION_MODELS_DIR, else the presets in composite/attention_models/), or auto (every model\n"
      "of Q's and out's formats).\n"
      "Examples:\n"
      "  fpconform audit attention --q q.npy --k k.npy --v v.npy --out o.npy --platform correctly-rounded\n"
      "  fpconform audit attention --q q.npy --q-dtype bfloat16 --k k.npy --k-dtype bfloat16 \\\n"
      "      --v v.npy --v-dtype bfloat16 --out o.npy --out-dtype bfloat16 --causal --platform auto \\\n"
      "      --json audit.json\n"
      "  fpconform audit attention --q q.npy --q-dtype bfloat16 --k k.npy --k-dtype bfloat16 --v v.npy \\\n"
      "      --v-dtype bfloat16 --out o.npy --out-dtype bfloat16 --lse lse.npy --platform flash-attention2-cuda-bf16\n"
      "--lse audits the LSE as well (its own classes; FlashAttention-2 writes +inf on fully masked rows).\n"
      "Besides the classes, the aggregate gate: relative L2 error and correlation against the exact output,\n"
      "each within the limit the platform's per-element bounds imply (reports/AUDIT.md, \"Aggregate gate\").\n"
      "Exit status: 0 pass, 1 an element (of out or the LSE) is unexplained or the aggregate gate fails, 2 bad input.");

  s.cast = app->add_subcommand("cast", "out = cast(X / scale) elementwise (quantization)");
  AddTensorOption(s.cast, s.x, "X");
  AddTensorOption(s.cast, s.out, "The kernel's output");
  s.cast->add_option("--to", s.to, "Target format[:sat] (e.g. float8_e4m3fn:sat)")->required();
  s.cast->add_option("--rounding", s.rounding, "rne rna rtz rup rdn rto or sr<k> (default rne)");
  s.cast->add_option("--scale", s.scale, "out = cast(fl32(X / scale)) (default 1: cast(X))");
  AddCommon(s.cast, s.common, false);

  return app;
}

CLI::App* AddCompareCommand(CLI::App& root, AuditCommandState& s) {
  CLI::App* app = root.add_subcommand(
      "compare", "Compare two platforms' outputs on the same inputs: each audited against its own "
                 "platform, their difference checked against both platforms' bounds");
  app->require_subcommand(1);
  s.compare_matmul = app->add_subcommand("matmul", "Two outputs of out = A @ B");
  AddTensorOption(s.compare_matmul, s.a, "A");
  AddTensorOption(s.compare_matmul, s.b, "B");
  AddCompareOutputs(s.compare_matmul, s, "Platform");
  s.compare_matmul->add_flag("--transpose-a", s.transpose_a, "The A file holds A^T");
  s.compare_matmul->add_flag("--transpose-b", s.transpose_b, "The B file holds B^T");
  AddCommon(s.compare_matmul, s.common, true);
  s.compare_elementwise = app->add_subcommand("elementwise", "Two outputs of out = FN(X) elementwise");
  AddTensorOption(s.compare_elementwise, s.x, "X");
  AddCompareOutputs(s.compare_elementwise, s, "Composite model");
  s.compare_elementwise->add_option("--fn", s.fn, "The function: exp exp2 log tanh sigmoid silu gelu "
                                                  "gelu_tanh rsqrt reciprocal")->required();
  AddCommon(s.compare_elementwise, s.common, true);
  for (size_t i = 0; i < kAxisOpNames.size(); ++i) {
    CLI::App* sub = app->add_subcommand(kAxisOpNames[i], Cat("Two outputs of ", kAxisOpWhat[i]));
    s.compare_axis_ops[i] = sub;
    AddTensorOption(sub, s.x, "X");
    AddCompareOutputs(sub, s, "Composite model");
    AddAxisOpOptions(sub, i, s);
    AddCommon(sub, s.common, true);
  }
  s.compare_attention = app->add_subcommand("attention", "Two outputs of softmax(scale Q K^T + mask) V");
  AddAttentionInputs(s.compare_attention, s);
  AddCompareOutputs(s.compare_attention, s, "Attention model");
  AddTensorOption(s.compare_attention, s.lse_ref,
                  "Optional: the reference's LSE (float), Q's shape without D, audited against --platform-ref");
  AddTensorOption(s.compare_attention, s.lse, "Optional: the port's LSE, audited against --platform");
  AddCommon(s.compare_attention, s.common, true);
  s.compare_attention->footer(
      "Example (FlashAttention-2 on the GPU, NKI flash_fwd on Trainium, both LSEs):\n"
      "  fpconform compare attention --q q.npy --k k.npy --v v.npy --causal \\\n"
      "      --out-ref o_gpu.npy --lse-ref lse_gpu.npy --platform-ref flash-attention2-cuda-bf16 \\\n"
      "      --out o_nki.npy --lse lse_nki.npy --platform nki-flash-fwd-bf16\n"
      "With both LSEs their rows are compared as the outputs are (the sum of both platforms' LSE bounds);\n"
      "an inconsistent LSE row fails the comparison. Exit status: 0 consistent, 1 not, 2 bad input.");
  app->footer(
      "Example:\n"
      "  fpconform compare matmul --a a.npy --a-dtype bfloat16 --b b.npy --b-dtype bfloat16 \\\n"
      "      --out-ref c_gpu.npy --platform-ref nvidia-h100-bf16 --out c_nki.npy \\\n"
      "      --platform trainium2-bf16-envelope\n"
      "  fpconform compare rmsnorm --x x.npy --x-dtype bfloat16 --weight w.npy --weight-dtype bfloat16 \\\n"
      "      --eps 1e-6 --out-ref y_gpu.npy --out-dtype bfloat16 --platform-ref hf-llama-rmsnorm-cuda-bf16 \\\n"
      "      --out y_nki.npy --platform nki-rmsnorm-tkg-bf16\n"
      "  fpconform compare elementwise --fn gelu --x x.npy --out-ref y_gpu.npy --platform-ref torch-cuda-f32 \\\n"
      "      --out y_cpu.npy --platform torch-cpu-f32\n"
      "  fpconform compare attention --q q.npy --k k.npy --v v.npy --causal --out-ref o_gpu.npy \\\n"
      "      --platform-ref flash-attention2-cuda-bf16 --out o_nki.npy --platform nki-flash-fwd-bf16\n"
      "--models-dir names the directory of composite models (elementwise and axis ops) or of attention models.\n"
      "Exit status: 0 consistent, 1 an inconsistent element, 2 bad input.");
  return app;
}

int RunAuditCommand(const AuditCommandState& s) {
  reports::InterruptGuard interrupts;
  const int rc = RunAudit(s);
  if (reports::InterruptGuard::Interrupted()) {
    std::fprintf(stderr, "fpconform audit: interrupted: nothing was written\n");
    return 128 + reports::InterruptGuard::Signal();
  }
  return rc;
}

static int RunAudit(const AuditCommandState& s) {
  const AuditCommonOptions& c = s.common;
  const bool compare = Parsed(s.compare_matmul) || Parsed(s.compare_elementwise) || Parsed(s.compare_attention) ||
                       std::any_of(s.compare_axis_ops.begin(), s.compare_axis_ops.end(), Parsed);
  const char* cmd = compare ? "compare" : "audit";
  if (absl::Status st = CheckOutputs(c); !st.ok()) return Fail(cmd, st);
  absl::StatusOr<reports::AuditOptions> options =
      MakeOptions(c, c.platform.empty() && !s.cast->parsed() ? std::string() : c.platform);
  if (!options.ok()) return Fail(cmd, options.status());
  std::optional<OpEnv> cast_inputs;
  if (!c.cast_inputs.empty()) {
    absl::StatusOr<OpEnv> e = ParseMode(c.cast_inputs, "--cast-inputs");
    if (!e.ok()) return Fail(cmd, e.status());
    cast_inputs = *e;
  }
  absl::StatusOr<OpEnv> out_rounding = ParseMode(c.out_rounding, "--out-rounding");
  if (!out_rounding.ok()) return Fail(cmd, out_rounding.status());
  auto need = [&](const TensorArg& t) -> absl::StatusOr<Tensor> {
    if (t.file.empty()) return absl::InvalidArgumentError(Cat("--", t.name, " is required"));
    return LoadTensor(t);
  };
  absl::StatusOr<Tensor> out = need(s.out);
  if (!out.ok()) return Fail(cmd, out.status());
  absl::StatusOr<reports::AuditResult> r;
  if (s.matmul->parsed() || Parsed(s.compare_matmul)) {
    absl::StatusOr<Tensor> a = need(s.a);
    if (!a.ok()) return Fail(cmd, a.status());
    absl::StatusOr<Tensor> b = need(s.b);
    if (!b.ok()) return Fail(cmd, b.status());
    reports::MatmulAuditInput in;
    in.a = &*a;
    in.b = &*b;
    in.transpose_a = s.transpose_a;
    in.transpose_b = s.transpose_b;
    in.cast_inputs = cast_inputs;
    in.out_rounding = *out_rounding;
    if (compare) {
      in.out = &*out;
      return RunCompare(s, in, *options, reports::CompareMatmul);
    }
    std::optional<Tensor> ct;
    if (absl::Status st = LoadOptional(s.c, ct, in.c); !st.ok()) return Fail(cmd, st);
    absl::StatusOr<std::optional<Tensor>> sa = LoadScale(s.scale_a);
    if (!sa.ok()) return Fail(cmd, sa.status());
    absl::StatusOr<std::optional<Tensor>> sb = LoadScale(s.scale_b);
    if (!sb.ok()) return Fail(cmd, sb.status());
    if (sa->has_value()) in.scale_a = &**sa;
    if (sb->has_value()) in.scale_b = &**sb;
    in.out = &*out;
    if (absl::Status fs = PrepareFit(s, *options); !fs.ok()) return Fail(cmd, fs);
    r = reports::AuditMatmul(in, *options);
    if (r.ok()) {
      if (absl::Status fs = WriteFit(cmd, s, *r); !fs.ok()) return Fail(cmd, fs);
    }
  } else if (const auto axis_op = std::find_if(s.axis_ops.begin(), s.axis_ops.end(), Parsed),
             compare_axis_op = std::find_if(s.compare_axis_ops.begin(), s.compare_axis_ops.end(), Parsed);
             axis_op != s.axis_ops.end() || compare_axis_op != s.compare_axis_ops.end()) {
    absl::StatusOr<Tensor> x = need(s.x);
    if (!x.ok()) return Fail(cmd, x.status());
    if (cast_inputs.has_value()) {
      return Fail(cmd, absl::InvalidArgumentError("--cast-inputs: not taken by this audit "
                                                  "(the platform's input format must be X's)"));
    }
    reports::AxisAuditInput in;
    in.op = (axis_op != s.axis_ops.end() ? *axis_op : *compare_axis_op)->get_name();
    in.x = &*x;
    in.axis = s.axis;
    in.out = &*out;
    in.out_rounding = *out_rounding;
    std::optional<Tensor> weight, bias;
    if (absl::Status st = LoadOptional(s.weight, weight, in.weight); !st.ok()) return Fail(cmd, st);
    if (absl::Status st = LoadOptional(s.bias, bias, in.bias); !st.ok()) return Fail(cmd, st);
    if (absl::Status st = ParseOptional(s.eps, "--eps", in.eps); !st.ok()) return Fail(cmd, st);
    options->composite_models_dir = DataPath(DataItem::kCompositeModels, c.models_dir);
    if (compare) return RunCompare(s, in, *options, reports::CompareAxis);
    r = reports::AuditAxis(in, *options);
  } else if (Parsed(s.attention) || Parsed(s.compare_attention)) {
    if (cast_inputs.has_value()) {
      return Fail(cmd, absl::InvalidArgumentError("--cast-inputs: not taken by audit attention "
                                                  "(the platform's input format must be Q's)"));
    }
    absl::StatusOr<Tensor> q = need(s.q);
    if (!q.ok()) return Fail(cmd, q.status());
    absl::StatusOr<Tensor> k = need(s.k);
    if (!k.ok()) return Fail(cmd, k.status());
    absl::StatusOr<Tensor> v = need(s.v);
    if (!v.ok()) return Fail(cmd, v.status());
    reports::AttentionAuditInput in;
    in.q = &*q;
    in.k = &*k;
    in.v = &*v;
    in.out = &*out;
    in.causal = s.causal;
    in.out_rounding = *out_rounding;
    std::optional<Tensor> mask;
    if (absl::Status st = LoadOptional(s.mask, mask, in.mask); !st.ok()) return Fail(cmd, st);
    if (absl::Status st = ParseOptional(s.attention_scale, "--scale", in.scale); !st.ok()) {
      return Fail(cmd, st);
    }
    options->attention_models_dir = DataPath(DataItem::kAttentionModels, c.models_dir);
    std::optional<Tensor> lse, lse_ref;
    if (absl::Status st = LoadOptional(s.lse, lse, in.lse); !st.ok()) return Fail(cmd, st);
    if (compare) {
      // The reference side is the port's inputs with --out-ref and --lse-ref.
      const Tensor* ref_lse = nullptr;
      if (absl::Status st = LoadOptional(s.lse_ref, lse_ref, ref_lse); !st.ok()) {
        return Fail(cmd, st);
      }
      return RunCompare(s, in, *options,
                        [ref_lse](const reports::AttentionAuditInput& ref, const std::string& platform_ref,
                                  const reports::AttentionAuditInput& port, const std::string& platform,
                                  const reports::AuditOptions& o) {
                          reports::AttentionAuditInput with_lse = ref;
                          with_lse.lse = ref_lse;
                          return reports::CompareAttention(with_lse, platform_ref, port, platform, o);
                        });
    }
    r = reports::AuditAttention(in, *options);
  } else if (s.elementwise->parsed() || Parsed(s.compare_elementwise)) {
    absl::StatusOr<Tensor> x = need(s.x);
    if (!x.ok()) return Fail(cmd, x.status());
    if (cast_inputs.has_value()) {
      return Fail(cmd, absl::InvalidArgumentError("--cast-inputs: not taken by audit elementwise "
                                                  "(the platform's input format must be X's)"));
    }
    reports::ElementwiseAuditInput in;
    in.x = &*x;
    in.out = &*out;
    in.fn = s.fn;
    in.out_rounding = *out_rounding;
    options->composite_models_dir = DataPath(DataItem::kCompositeModels, c.models_dir);
    if (compare) return RunCompare(s, in, *options, reports::CompareElementwise);
    r = reports::AuditElementwise(in, *options);
  } else if (s.sum->parsed()) {
    absl::StatusOr<Tensor> x = need(s.x);
    if (!x.ok()) return Fail(cmd, x.status());
    reports::SumAuditInput in;
    in.x = &*x;
    in.axis = s.axis;
    in.out = &*out;
    in.cast_inputs = cast_inputs;
    in.out_rounding = *out_rounding;
    if (absl::Status fs = PrepareFit(s, *options); !fs.ok()) return Fail(cmd, fs);
    r = reports::AuditSum(in, *options);
    if (r.ok()) {
      if (absl::Status fs = WriteFit(cmd, s, *r); !fs.ok()) return Fail(cmd, fs);
    }
  } else {
    absl::StatusOr<Tensor> x = need(s.x);
    if (!x.ok()) return Fail(cmd, x.status());
    reports::CastAuditInput in;
    std::string to = s.to;
    OpEnv env;
    const size_t colon = to.find(':');
    if (colon != std::string::npos) {
      if (to.substr(colon + 1) != "sat") {
        return Fail(cmd, absl::InvalidArgumentError(Cat("--to '", s.to, "': the only option is :sat")));
      }
      env.saturate = true;
      to = to.substr(0, colon);
    }
    in.to = FindFormat(to);
    if (in.to == nullptr) {
      return Fail(cmd, absl::InvalidArgumentError(Cat("--to: unknown format '", to, "' (see `fpconform formats`)")));
    }
    if (!ParseRounding(s.rounding, env)) {
      return Fail(cmd, absl::InvalidArgumentError(Cat("--rounding: '", s.rounding, "' is not a rounding mode")));
    }
    in.env = env;
    in.scale = s.scale;
    in.x = &*x;
    in.out = &*out;
    r = reports::AuditCast(in, *options);
  }
  if (!r.ok()) return Fail(cmd, r.status());
  return Emit(cmd, c, reports::AuditSummaryText(*r) + reports::AuditFitText(*r), reports::AuditToJson(*r),
              reports::AuditReportFiles(*r), r->verdict == reports::AuditVerdict::kPass);
}

}  // namespace fpconform::cli
