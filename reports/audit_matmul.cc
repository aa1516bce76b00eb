// `fpconform audit matmul` as an op of the audit pipeline: out = [C +] A @ B, batched with
// numpy.matmul's broadcast, optionally with FP8 scales (audit.h).
//
// The pass, per batch element: A row-major and B column-major; row blocks through each
// platform's EvaluateMatmul, then the exact values and the classes. A is converted one row block
// at a time (a_block_, rows [block_i0_, block_i0_ + mb)), B once per batch element into
// column-major order (b_cm_): the audit holds one extra copy of B and a block of A, not of the
// whole inputs. The hot pass reads rows and columns in place (View).
#include <mpfr.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>

#include "accumulation/epilogue.h"
#include "accumulation/evaluate.h"
#include "base/isa.h"
#include "base/str_cat.h"
#include "formats/ops.h"
#include "oracles/certified_matmul.h"
#include "reports/audit.h"
#include "reports/audit_inputs.h"
#include "reports/audit_reduction.h"

namespace fpconform::reports {
namespace audit_internal {
namespace {

class MatmulOp : public ReductionOp {
 public:
  MatmulOp(const MatmulAuditInput& in, const AuditOptions& options)
      : ReductionOp(/*sum=*/false, options), in_(in) {}

  // Checks the input and states the audit (setup_); errors name the tensor and the problem.
  absl::Status Init();

  const char* Name() const override { return "matmul"; }
  int64_t BlockEnd(int64_t e0) const override;
  absl::Status EmulateBlock(int64_t e0, int64_t e1, std::vector<std::vector<Emulated>>& emu) override;

 protected:
  void Read(int64_t e, std::vector<uint64_t>& a, std::vector<uint64_t>& b, uint64_t& c) const override;
  bool View(int64_t e, std::span<const uint64_t>& a, std::span<const uint64_t>& b,
            uint64_t& c) const override;
  bool CertifiedExact(int64_t e, ExactAccumulator& acc) const override;
  double Scale(int64_t e) const override { return ScaleA(e) * ScaleB(e); }  // Exact in double.
  double ScaleA(int64_t e) const override {
    return sa_.size() == 1 ? sa_[0] : sa_[static_cast<size_t>((e / n_) % m_)];
  }
  double ScaleB(int64_t e) const override {
    return sb_.size() == 1 ? sb_[0] : sb_[static_cast<size_t>(e % n_)];
  }
  std::optional<double> TransposedB(int64_t e, std::span<const uint64_t> a) const override;
  std::optional<double> TransposedA(int64_t e, std::span<const uint64_t> b) const override;
  BlockScales ElementBlockScales(int64_t e) const override {
    const size_t i = static_cast<size_t>((e / n_) % m_), j = static_cast<size_t>(e % n_);
    const size_t kb = static_cast<size_t>(k_blocks_);
    return {std::span<const double>(block_sa_).subspan(i * kb, kb),
            std::span<const double>(block_sb_t_).subspan(j * kb, kb)};
  }
  void ScaledOperands(int64_t e, std::span<const uint64_t> a, std::span<const uint64_t> b,
                      std::vector<uint64_t>& x, std::vector<uint64_t>& y) const override;
  bool FastScaledExact(int64_t e, ExactAccumulator& acc) const override;

 private:
  // Per-block scales (block_scaled_): checks the scale tensors against the platforms' block and
  // fills block_sa_ and block_sb_t_.
  absl::Status InitBlockScales(const std::string& platform);

  uint64_t AAt(int64_t bi, int64_t i, int64_t kk) const {
    const int64_t base = BatchOffset(batch_index_[static_cast<size_t>(bi)], a_batch_) * m_ * k_;
    return a_reader_.Get(base + (in_.transpose_a ? kk * m_ + i : i * k_ + kk));
  }
  uint64_t BAt(int64_t bi, int64_t kk, int64_t j) const {
    const int64_t base = BatchOffset(batch_index_[static_cast<size_t>(bi)], b_batch_) * k_ * n_;
    return b_reader_.Get(base + (in_.transpose_b ? j * k_ + kk : kk * n_ + j));
  }
  uint64_t CAt(int64_t e) const {
    return cbits_.empty() ? 0 : cbits_[static_cast<size_t>(c_full_ ? e : e % (m_ * n_))];
  }
  double ExactDotDouble(std::span<const uint64_t> x, std::span<const uint64_t> y, double s) const;

  const MatmulAuditInput& in_;
  int64_t m_ = 0, n_ = 0, k_ = 0;
  std::vector<int64_t> a_batch_, b_batch_;
  std::vector<std::vector<int64_t>> batch_index_;
  InputReader a_reader_, b_reader_;
  std::vector<uint64_t> cbits_;  // C in the final accumulator format (exactly).
  bool c_full_ = false;          // C has the batch dimensions too.
  std::vector<double> sa_, sb_;
  // Per-block scales: scale_a (m x k_blocks_, row-major) and scale_b transposed (n x k_blocks_),
  // a scalar file expanded; scale_block_ products per block along K.
  std::vector<double> block_sa_, block_sb_t_;
  // FastScaledExact's data for the current block: A's rows (mb x k) and B's columns (n x k) as
  // float64 bits, unscaled where block_sums_exact_, else with their block scales in.
  std::vector<uint64_t> a_ops_, b_ops_;  // Float64 bits.
  // Every block's sum of products is exact in binary64 (any order): the inputs are multiples of
  // their smallest subnormal, so a block's products are integer multiples of q with
  // |sum| < block 2^(Emax_a + Emax_b + 2) <= 2^53 q (float8_e4m3fn: q = 2^-18, products < 2^18,
  // blocks up to 2^17). Then the exact value is sum_b S_b X_b, one exact product per block.
  bool block_sums_exact_ = false;
  int64_t scale_block_ = 0, k_blocks_ = 0;
  int64_t block_rows_ = 1;
  // The current block.
  std::vector<uint64_t> a_block_, b_cm_, cblock_, d_;
  std::vector<double> bounds_;
  int64_t block_i0_ = 0;
  // The certified exact values of the current row block (batch element cert_batch_, rows
  // [block_i0_, block_i0_ + rows)): one error-free float64 GEMM per block instead of an exact
  // accumulation per element; elements it cannot give take AddDot. Not under
  // FPCONFORM_ISA=portable (no host-double paths there, as in exact_sum), so
  // cli/isa_identity_test.sh compares the audit's JSON with and without it byte for byte.
  bool certify_ = false;
  std::optional<OzakiSplit> split_a_, split_b_;
  std::optional<CertifiedMatmul> cert_;
  int64_t cert_batch_ = -1;
};

absl::Status MatmulOp::Init() {
  const MatmulAuditInput& in = in_;
  if (in.a == nullptr || in.b == nullptr || in.out == nullptr) {
    return absl::InvalidArgumentError("audit matmul needs --a, --b and --out");
  }
  for (const auto& [t, role] : {std::pair{in.a, "A"}, {in.b, "B"}, {in.out, "the output"}}) {
    if (absl::Status s = CheckFloat(*t, role); !s.ok()) return s;
  }
  const Tensor& A = *in.a;
  const Tensor& B = *in.b;
  const Tensor& O = *in.out;
  if (A.shape.size() < 2 || B.shape.size() < 2) {
    return absl::InvalidArgumentError(Cat(A.shape.size() < 2 ? A.source : B.source,
                                          ": matmul operands must be at least 2-D, got shape ",
                                          ShapeText(A.shape.size() < 2 ? A.shape : B.shape)));
  }
  const int64_t ar = A.shape[A.shape.size() - 2], ac = A.shape.back();
  const int64_t br = B.shape[B.shape.size() - 2], bc = B.shape.back();
  const int64_t m = in.transpose_a ? ac : ar, k = in.transpose_a ? ar : ac;
  const int64_t kb = in.transpose_b ? bc : br, n = in.transpose_b ? br : bc;
  if (k != kb) {
    return absl::InvalidArgumentError(
        Cat("matmul: A", in.transpose_a ? "^T" : "", " is ", m, " x ", k, " (", A.source,
            " shape ", ShapeText(A.shape), ") but B", in.transpose_b ? "^T" : "", " is ", kb,
            " x ", n, " (", B.source, " shape ", ShapeText(B.shape), "): the inner dimensions differ"));
  }
  if (k < 1 || m < 1 || n < 1) return absl::InvalidArgumentError("matmul: an operand has a zero dimension");
  m_ = m;
  n_ = n;
  k_ = k;
  a_batch_.assign(A.shape.begin(), A.shape.end() - 2);
  b_batch_.assign(B.shape.begin(), B.shape.end() - 2);
  std::vector<int64_t> batch;
  if (!BroadcastBatch(a_batch_, b_batch_, batch)) {
    return absl::InvalidArgumentError(Cat("matmul: batch dimensions ", ShapeText(a_batch_), " of ",
                                          A.source, " and ", ShapeText(b_batch_), " of ", B.source,
                                          " do not broadcast"));
  }
  std::vector<int64_t> out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  if (O.shape != out_shape) {
    return absl::InvalidArgumentError(Cat(O.source, ": the output has shape ", ShapeText(O.shape),
                                          ", expected ", ShapeText(out_shape), " for A ",
                                          ShapeText(A.shape), " @ B ", ShapeText(B.shape)));
  }
  if (absl::Status s = ResolvePlatforms(options_.platforms, A.format, B.format); !s.ok()) return s;
  setup_.out = &O;
  setup_.out_format = O.format;
  out_rounding_ = in.out_rounding;
  setup_.out_shape = out_shape;
  setup_.elements = O.size();
  setup_.k = k;
  setup_.progress_label = "matmul rows";
  setup_.progress_unit = n;
  const Model& m0 = *models_[0];
  const FormatSpec& fa = *m0.inputs.a;
  const FormatSpec& fb = m0.InputB();
  for (size_t p = 0; p < models_.size(); ++p) {
    if (models_[p]->inputs.a != &fa || &models_[p]->InputB() != &fb) {
      return absl::InvalidArgumentError(
          Cat("--platform: ", setup_.platforms[p].name, " takes ", models_[p]->inputs.a->name,
              " x ", models_[p]->InputB().name, " inputs but ", m0.name, " takes ", fa.name,
              " x ", fb.name, ": audit them in separate runs"));
    }
  }
  absl::StatusOr<InputReader> a_reader = MakeInputReader(A, fa, in.cast_inputs, "A", m0.name, setup_.notes);
  if (!a_reader.ok()) return a_reader.status();
  absl::StatusOr<InputReader> b_reader = MakeInputReader(B, fb, in.cast_inputs, "B", m0.name, setup_.notes);
  if (!b_reader.ok()) return b_reader.status();
  a_reader_ = *a_reader;
  b_reader_ = *b_reader;
  const FormatSpec& cf = m0.FinalAccumulatorFormat();
  if (in.c != nullptr) {
    const Tensor& C = *in.c;
    if (absl::Status s = CheckFloat(C, "C"); !s.ok()) return s;
    const std::vector<int64_t> mn = {m, n};
    if (C.shape != out_shape && C.shape != mn) {
      return absl::InvalidArgumentError(Cat(C.source, ": C has shape ", ShapeText(C.shape),
                                            ", expected ", ShapeText(out_shape), " or ", ShapeText(mn)));
    }
    c_full_ = C.shape == out_shape;
    cbits_.resize(static_cast<size_t>(C.size()));
    for (int64_t i = 0; i < C.size(); ++i) {
      const OpResult r = Convert(*C.format, cf, C.Bits(i), OpEnv{});
      if (r.flags & (kInexact | kOverflow)) {
        return absl::InvalidArgumentError(Cat(C.source, ": C[", i, "] is not exactly representable in ",
                                              cf.name, ", the accumulator format of ", m0.name));
      }
      cbits_[static_cast<size_t>(i)] = r.bits;
    }
    for (size_t p = 0; p < models_.size(); ++p) {
      if (&models_[p]->FinalAccumulatorFormat() != &cf) {
        return absl::InvalidArgumentError(Cat("--c: ", setup_.platforms[p].name, " and ", m0.name,
                                              " accumulate in different formats: audit them separately"));
      }
    }
    c_format_ = &cf;
  }
  const bool any_scale = in.scale_a != nullptr || in.scale_b != nullptr;
  for (size_t p = 1; p < models_.size(); ++p) {
    const Model::Epilogue& e0 = m0.epilogue;
    const Model::Epilogue& ep = models_[p]->epilogue;
    if (any_scale && (ep.scale == EpilogueScale::kBlock) != (e0.scale == EpilogueScale::kBlock)) {
      return absl::InvalidArgumentError(
          Cat("--platform: ", e0.scale == EpilogueScale::kBlock ? m0.name : setup_.platforms[p].name,
              " takes per-block scales and ", e0.scale == EpilogueScale::kBlock ? setup_.platforms[p].name : m0.name,
              " does not: audit them in separate runs"));
    }
    if (any_scale && ep.scale == EpilogueScale::kBlock && ep.scale_block != e0.scale_block) {
      return absl::InvalidArgumentError(Cat("--platform: ", setup_.platforms[p].name, " scales blocks of ",
                                            ep.scale_block, " products and ", m0.name, " blocks of ",
                                            e0.scale_block, ": audit them in separate runs"));
    }
  }
  if (any_scale && m0.epilogue.scale == EpilogueScale::kBlock) {
    if (absl::Status s = InitBlockScales(setup_.platforms[0].name); !s.ok()) return s;
  }
  absl::StatusOr<std::vector<double>> sa =
      ScaleValues(block_scaled_ ? nullptr : in.scale_a, m, "scale_a");
  if (!sa.ok()) return sa.status();
  absl::StatusOr<std::vector<double>> sb =
      ScaleValues(block_scaled_ ? nullptr : in.scale_b, n, "scale_b");
  if (!sb.ok()) return sb.status();
  sa_ = *std::move(sa);
  sb_ = *std::move(sb);
  scaled_ = any_scale && !block_scaled_;
  // epilogue.c = "after_scale" (cuBLASLt): with scales and a C, out = fl32(S32 acc + C), C
  // unscaled. The exact value then differs from the other platforms' S (x + C): one run takes
  // one of the two.
  for (size_t p = 0; p < models_.size(); ++p) {
    std::optional<Model> chain = ChainAloneModel(*models_[p], scaled_, in.c != nullptr);
    if (p > 0 && chain.has_value() != c_after_scale_) {
      return absl::InvalidArgumentError(
          Cat("--platform: ", c_after_scale_ ? m0.name : setup_.platforms[p].name,
              " adds C after the scales (epilogue.c = \"after_scale\") and ",
              c_after_scale_ ? setup_.platforms[p].name : m0.name,
              " scales it with the product: audit them in separate runs"));
    }
    c_after_scale_ = chain.has_value();
    if (chain.has_value()) chain_only_.push_back(*std::move(chain));
  }
  if (c_after_scale_ && (fa.fraction_bits > 23 || fb.fraction_bits > 23)) {
    return absl::InvalidArgumentError(Cat("--c with scales: ", m0.name, " takes ", fa.name, " x ", fb.name,
                                          " inputs; at most 24 significand bits are supported"));
  }
  operands_scaled_ = block_scaled_ || c_after_scale_;
  for (size_t p = 0; p < models_.size() && !block_scaled_; ++p) {
    if (absl::Status s = CheckEpilogueScales(*models_[p], in.scale_a != nullptr ? in.scale_a->size() : 0,
                                             in.scale_b != nullptr ? in.scale_b->size() : 0);
        !s.ok()) {
      return absl::InvalidArgumentError(Cat("--platform: ", s.message()));
    }
  }
  const int64_t batches = O.size() / (m * n);
  batch_index_.resize(static_cast<size_t>(batches));
  for (int64_t bi = 0; bi < batches; ++bi) batch_index_[static_cast<size_t>(bi)] = Unflatten(bi, batch);
  fa_ = &fa;
  fb_ = &fb;
  setup_.input_format = std::string(fa.name) + (&fa == &fb ? "" : Cat(" x ", fb.name));
  setup_.formula =
      block_scaled_
          ? Cat("out = fl_", O.format->name, "(the platform's float32 accumulator), each K block b of ",
                scale_block_, " products scaled inside the chain with S = scale_a[i,b] scale_b[b,j]: ",
                m0.epilogue.block_apply == BlockApply::kProducts
                    ? "every product of block b times S, exactly (power-of-two scales)"
                    : Cat("the block's partial sum p enters as ",
                          m0.epilogue.block_apply == BlockApply::kFma ? "fl32(acc + fl32(S) p)"
                                                                       : "fl32(acc + fl32(fl32(S) p))"),
                in.c != nullptr ? "; C[i,j] unscaled" : "",
                "; exact = ", in.c != nullptr ? "C[i,j] + " : "",
                "sum_b scale_a[i,b] scale_b[b,j] sum_{k in b} A[i,k] B[k,j]")
      : c_after_scale_
          ? Cat("out = fl_", O.format->name, "(fl32(fl32(scale_a[i] * scale_b[j]) * acc + C[i,j])), one "
                "rounding (FFMA), acc = the platform's ", m0.OutputFormat().name,
                " output of sum_k A[i,k] B[k,j] from +0; exact = scale_a[i] * scale_b[j] * sum_k "
                "A[i,k] B[k,j] + C[i,j]")
      : scaled_ ? Cat("out = fl_", O.format->name,
                    m0.epilogue.scale_order == ScaleOrder::kProduct
                        ? "(fl32(fl32(scale_a[i] * scale_b[j]) * acc)), acc = "
                        : "(fl32(fl32(acc * scale_a[i]) * scale_b[j])), acc = ",
                    "the platform's ", m0.OutputFormat().name,
                    " output of sum_k A[i,k] B[k,j]; exact = scale_a[i] * scale_b[j] * sum_k A[i,k] B[k,j]")
              : Cat("out = fl_", O.format->name, "(", in.c != nullptr ? "C[i,j] + " : "",
                    "sum_k A[i,k] B[k,j]) in the platform's order; exact = the same sum, exactly");
  NoteOutputConversion(m0, scaled_ ? "float32 (after the scale)" : std::string(m0.OutputFormat().name));
  NoteBf16Fit(O, "the output", setup_.notes);
  AddFileProvenance(setup_.provenance, "A", A);
  AddFileProvenance(setup_.provenance, "B", B);
  if (in.c != nullptr) AddFileProvenance(setup_.provenance, "C", *in.c);
  AddFileProvenance(setup_.provenance, "out", O);
  setup_.provenance.emplace_back("tool", ToolVersion());
  RecommendAll();
  certify_ = !operands_scaled_ && ActiveIsa() != Isa::kPortable && CertifiedMatmul::Supports(fa) &&
             CertifiedMatmul::Supports(fb) && k <= (int64_t{1} << 31);
  block_rows_ = std::max<int64_t>(1, std::min<int64_t>(m, (1 << 18) / std::max<int64_t>(1, n)));
  return absl::OkStatus();
}

absl::Status MatmulOp::InitBlockScales(const std::string& platform) {
  const Model& m0 = *models_[0];
  const int64_t block = m0.epilogue.scale_block;
  const int64_t kb = (k_ + block - 1) / block;
  const FormatSpec& fa = *m0.inputs.a;
  const FormatSpec& fb = m0.InputB();
  if (fa.fraction_bits > 23 || fb.fraction_bits > 23) {
    return absl::InvalidArgumentError(Cat("--scale-a/--scale-b: per-block scales need inputs of at most 24 "
                                          "significand bits; ", platform, " takes ", fa.name, " x ", fb.name));
  }
  const bool pow2 = m0.epilogue.block_apply == BlockApply::kProducts;
  // One scale file: its values (1 element, or the expected 2-D shape), checked.
  auto read = [&](const Tensor* t, const char* role, int64_t rows, int64_t cols,
                  const char* what) -> absl::StatusOr<std::vector<double>> {
    std::vector<double> v(static_cast<size_t>(rows * cols), 1.0);
    if (t == nullptr) return v;
    const std::vector<int64_t> want = {rows, cols};
    if (t->size() != 1 && t->shape != want) {
      return absl::InvalidArgumentError(
          Cat(t->source, ": ", role, " has shape ", ShapeText(t->shape), " but ", platform,
              " takes per-block scales (epilogue.scale = \"block\", ", block, " products per block along K): expected ",
              ShapeText(want), ", ", what, " (K = ", k_, " in ", kb, " blocks), or 1 element"));
    }
    absl::StatusOr<std::vector<double>> vals = ScaleValues(t, t->size(), role);
    if (!vals.ok()) return vals.status();
    for (size_t i = 0; i < vals->size(); ++i) {
      int exp = 0;
      if (pow2 && !((*vals)[i] > 0 && std::frexp((*vals)[i], &exp) == 0.5)) {
        return absl::InvalidArgumentError(
            Cat(t->source, ": ", role, "[", i, "] = ", Num((*vals)[i]), ": ", platform,
                " applies power-of-two block scales (epilogue.block_apply = \"products\", MX E8M0)"));
      }
    }
    if (vals->size() == 1) std::fill(v.begin(), v.end(), (*vals)[0]);
    else v = *std::move(vals);
    return v;
  };
  absl::StatusOr<std::vector<double>> sa = read(in_.scale_a, "scale_a", m_, kb, "one per row of A and K block");
  if (!sa.ok()) return sa.status();
  absl::StatusOr<std::vector<double>> sb = read(in_.scale_b, "scale_b", kb, n_, "one per K block and column of B");
  if (!sb.ok()) return sb.status();
  block_sa_ = *std::move(sa);
  block_sb_t_.resize(static_cast<size_t>(n_ * kb));
  for (int64_t b = 0; b < kb; ++b) {
    for (int64_t j = 0; j < n_; ++j) {
      block_sb_t_[static_cast<size_t>(j * kb + b)] = (*sb)[static_cast<size_t>(b * n_ + j)];
    }
  }
  scale_block_ = block;
  k_blocks_ = kb;
  block_scaled_ = true;
  {
    const int log2_block = std::bit_width(static_cast<uint64_t>(block - 1));  // ceil(log2 block).
    block_sums_exact_ = log2_block + (Emax(fa) + 1) + (Emax(fb) + 1) -
                            (MinSubnormalExponent(fa) + MinSubnormalExponent(fb)) <=
                        53;
  }
  setup_.notes.push_back(Cat("per-block scales (", kb, " blocks of ", block,
                             " along K) enter inside the chain (EvaluateBlockScaledMatmul); the "
                             "tolerance recommendation is the unscaled model's (every block scale 1)"));
  return absl::OkStatus();
}

void MatmulOp::ScaledOperands(int64_t e, std::span<const uint64_t> a, std::span<const uint64_t> b,
                              std::vector<uint64_t>& x, std::vector<uint64_t>& y) const {
  const BlockScales s = block_scaled_ ? ElementBlockScales(e) : BlockScales{};
  const double sa = ScaleA(e), sb = ScaleB(e);  // Without block scales.
  x.resize(a.size());
  y.resize(b.size());
  for (size_t kk = 0; kk < a.size(); ++kk) {
    const size_t blk = block_scaled_ ? kk / static_cast<size_t>(scale_block_) : 0;
    // Exact: <= 24-bit inputs times float32 scales (<= 48 bits, exponents within binary64's).
    x[kk] = std::bit_cast<uint64_t>((block_scaled_ ? s.a[blk] : sa) * ToDouble(*fa_, a[kk]));
    y[kk] = std::bit_cast<uint64_t>((block_scaled_ ? s.b[blk] : sb) * ToDouble(*fb_, b[kk]));
  }
}

bool MatmulOp::FastScaledExact(int64_t e, ExactAccumulator& acc) const {
  const int64_t i = (e / n_) % m_ - block_i0_, j = e % n_;
  if (!block_scaled_ || i < 0 || static_cast<size_t>((i + 1) * k_) > a_ops_.size()) return false;
  const std::span<const uint64_t> x = std::span<const uint64_t>(a_ops_).subspan(static_cast<size_t>(i * k_), static_cast<size_t>(k_));
  const std::span<const uint64_t> y = std::span<const uint64_t>(b_ops_).subspan(static_cast<size_t>(j * k_), static_cast<size_t>(k_));
  acc.Reset();
  if (!block_sums_exact_) {
    acc.AddDot(Float64(), x, Float64(), y);
    return true;
  }
  const BlockScales s = ElementBlockScales(e);
  bool nonzero = false;
  for (int64_t blk = 0; blk < k_blocks_; ++blk) {
    const int64_t lo = blk * scale_block_, hi = std::min(k_, lo + scale_block_);
    double sum = 0;  // Exact (block_sums_exact_), in any order.
    for (int64_t kk = lo; kk < hi; ++kk) {
      sum += std::bit_cast<double>(x[static_cast<size_t>(kk)]) * std::bit_cast<double>(y[static_cast<size_t>(kk)]);
    }
    if (!std::isfinite(sum)) return false;  // A NaN or Inf operand: the general path.
    if (sum == 0) continue;
    nonzero = true;
    const double scale = s.a[static_cast<size_t>(blk)] * s.b[static_cast<size_t>(blk)];  // Exact.
    acc.AddProduct(Float64(), std::bit_cast<uint64_t>(scale), Float64(), std::bit_cast<uint64_t>(sum));
  }
  // An exact zero takes the sign of its terms (IEEE 754-2019 §6.3): the general path has them.
  return nonzero;
}

int64_t MatmulOp::BlockEnd(int64_t e0) const {
  const int64_t i0 = (e0 % (m_ * n_)) / n_;
  return e0 + std::min(block_rows_, m_ - i0) * n_;
}

absl::Status MatmulOp::EmulateBlock(int64_t e0, int64_t e1, std::vector<std::vector<Emulated>>& emu) {
  const int64_t bi = e0 / (m_ * n_), i0 = (e0 % (m_ * n_)) / n_, mb = (e1 - e0) / n_;
  const int64_t b_mat = k_ * n_;
  if (i0 == 0) {  // A new batch element: B in column-major order.
    b_cm_.resize(static_cast<size_t>(b_mat));
    for (int64_t j = 0; j < n_; ++j) {
      for (int64_t kk = 0; kk < k_; ++kk) b_cm_[static_cast<size_t>(j * k_ + kk)] = BAt(bi, kk, j);
    }
    if (certify_) {
      cert_.reset();
      split_b_.emplace(*fb_, std::span<const uint64_t>(b_cm_.data(), static_cast<size_t>(b_mat)), n_, k_);
    }
  }
  const std::span<const uint64_t> bspan(b_cm_.data(), static_cast<size_t>(b_mat));
  a_block_.resize(static_cast<size_t>(mb * k_));
  for (int64_t i = 0; i < mb; ++i) {
    for (int64_t kk = 0; kk < k_; ++kk) a_block_[static_cast<size_t>(i * k_ + kk)] = AAt(bi, i0 + i, kk);
  }
  block_i0_ = i0;
  const std::span<const uint64_t> ablock(a_block_);
  cblock_.clear();
  if (!cbits_.empty()) {
    cblock_.resize(static_cast<size_t>(mb * n_));
    for (int64_t t = 0; t < mb * n_; ++t) cblock_[static_cast<size_t>(t)] = CAt(e0 + t);
  }
  d_.resize(static_cast<size_t>(mb * n_));
  bounds_.resize(static_cast<size_t>(mb * n_));
  const std::span<const double> block_sa =
      block_scaled_ ? std::span<const double>(block_sa_).subspan(static_cast<size_t>(i0 * k_blocks_),
                                                                 static_cast<size_t>(mb * k_blocks_))
                    : std::span<const double>();
  if (block_scaled_) {
    // FastScaledExact's operands as float64 bits (scaled unless block_sums_exact_), B's once per
    // batch element. Exact: <= 24-bit inputs times float32 scales.
    auto to_float64 = [&](std::span<const uint64_t> bits, const FormatSpec& f, std::span<const double> scales,
                          int64_t rows, std::vector<uint64_t>& out) {
      out.resize(static_cast<size_t>(rows * k_));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t kk = 0; kk < k_; ++kk) {
          const size_t t = static_cast<size_t>(r * k_ + kk);
          const double scale =
              block_sums_exact_ ? 1.0 : scales[static_cast<size_t>(r * k_blocks_ + kk / scale_block_)];
          out[t] = std::bit_cast<uint64_t>(ToDouble(f, bits[t]) * scale);
        }
      }
    };
    if (i0 == 0) to_float64(b_cm_, *fb_, block_sb_t_, n_, b_ops_);
    to_float64(a_block_, *fa_, block_sa, mb, a_ops_);
  }
  for (size_t p = 0; p < models_.size(); ++p) {
    EvalOptions eo;
    eo.threads = std::max(1, options_.threads);
    const int mi = static_cast<int>(mb), ni = static_cast<int>(n_), ki = static_cast<int>(k_);
    // Block scales enter inside the chain; with c_after_scale_ the chain runs alone (from +0)
    // and C enters after the scale, in PostProcess.
    const absl::Status s =
        block_scaled_
            ? EvaluateBlockScaledMatmul(EvalModel(p), mi, ni, ki, ablock, Layout::kRowMajor, bspan,
                                        Layout::kColumnMajor, block_sa, block_sb_t_, cblock_, d_, bounds_, eo)
            : EvaluateMatmul(EvalModel(p), mi, ni, ki, ablock, Layout::kRowMajor, bspan, Layout::kColumnMajor,
                             c_after_scale_ ? std::span<const uint64_t>() : cblock_, d_, bounds_, eo);
    if (!s.ok()) return s;
    emu[p].resize(d_.size());
    for (size_t t = 0; t < d_.size(); ++t) {
      emu[p][t] = PostProcess(p, e0 + static_cast<int64_t>(t), d_[t], bounds_[t],
                              c_after_scale_ ? &cblock_[t] : nullptr);
    }
  }
  if (certify_) {
    cert_.reset();
    split_a_.emplace(*fa_, ablock, mb, k_);
    cert_.emplace(*split_a_, *split_b_, std::max(1, options_.threads));
    cert_batch_ = bi;
  }
  return absl::OkStatus();
}

void MatmulOp::Read(int64_t e, std::vector<uint64_t>& a, std::vector<uint64_t>& b, uint64_t& c) const {
  const int64_t bi = e / (m_ * n_), i = (e / n_) % m_, j = e % n_;
  a.resize(static_cast<size_t>(k_));
  b.resize(static_cast<size_t>(k_));
  for (int64_t kk = 0; kk < k_; ++kk) {
    a[static_cast<size_t>(kk)] = AAt(bi, i, kk);
    b[static_cast<size_t>(kk)] = BAt(bi, kk, j);
  }
  c = CAt(e);
}

bool MatmulOp::View(int64_t e, std::span<const uint64_t>& a, std::span<const uint64_t>& b,
                    uint64_t& c) const {
  const int64_t i = (e / n_) % m_, j = e % n_;
  a = std::span<const uint64_t>(a_block_.data() + (i - block_i0_) * k_, static_cast<size_t>(k_));
  b = std::span<const uint64_t>(b_cm_.data() + j * k_, static_cast<size_t>(k_));
  c = CAt(e);
  return true;
}

bool MatmulOp::CertifiedExact(int64_t e, ExactAccumulator& acc) const {
  if (!cert_ || e / (m_ * n_) != cert_batch_) return false;
  const int64_t i = (e / n_) % m_ - block_i0_, j = e % n_;
  if (i < 0 || i >= split_a_->rows()) return false;
  return cert_->TryLoad(i, j, acc) != CertifiedMatmul::Route::kFallback;
}

double MatmulOp::ExactDotDouble(std::span<const uint64_t> x, std::span<const uint64_t> y, double s) const {
  ExactAccumulator acc;
  acc.AddDot(*fa_, x, *fb_, y);
  if (!acc.IsFinite()) return double{NAN};
  Mpfr v;
  acc.ToMpfr(v.v);
  return mpfr_get_d(v.v, MPFR_RNDN) * s;
}

std::optional<double> MatmulOp::TransposedB(int64_t e, std::span<const uint64_t> a) const {
  if (k_ != n_ || fa_ != fb_ || operands_scaled_) return std::nullopt;
  const int64_t bi = e / (m_ * n_), j = e % n_;
  std::vector<uint64_t> row(static_cast<size_t>(k_));
  for (int64_t kk = 0; kk < k_; ++kk) row[static_cast<size_t>(kk)] = BAt(bi, j, kk);
  return ExactDotDouble(a, row, Scale(e));
}

std::optional<double> MatmulOp::TransposedA(int64_t e, std::span<const uint64_t> b) const {
  if (m_ != k_ || fa_ != fb_ || operands_scaled_) return std::nullopt;
  const int64_t bi = e / (m_ * n_), i = (e / n_) % m_;
  std::vector<uint64_t> col(static_cast<size_t>(k_));
  for (int64_t kk = 0; kk < k_; ++kk) col[static_cast<size_t>(kk)] = AAt(bi, kk, i);
  return ExactDotDouble(col, b, Scale(e));
}

}  // namespace
}  // namespace audit_internal

absl::StatusOr<AuditResult> AuditMatmul(const MatmulAuditInput& in, const AuditOptions& options) {
  return audit_internal::RunOp<audit_internal::MatmulOp>(in, options);
}

}  // namespace fpconform::reports
