// `fpconform audit attention` as an op of the audit pipeline (audit.h AuditAttention): out =
// softmax(scale Q K^T + mask) V per (batch, head), exact values from oracles/attention.h. The
// output is viewed as heads x S_q x D_v; a block of the pass is a run of whole query rows of one
// head, computed by AttentionRows (certified binary64 with MPFR fallback) on options.threads.
#include <mpfr.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <map>
#include <memory>
#include <numbers>
#include <optional>

#include "base/data_dir.h"
#include "base/hash.h"
#include "base/str_cat.h"
#include "base/user_file.h"
#include "composite/attention_model.h"
#include "formats/ops.h"
#include "formats/text.h"
#include "oracles/attention.h"
#include "reports/audit.h"
#include "reports/audit_composite.h"
#include "reports/audit_inputs.h"
#include "reports/audit_op.h"
#include "reports/audit_values.h"

namespace fpconform::reports {
namespace audit_internal {
namespace {

constexpr char kCorrectlyRounded[] = "correctly-rounded";
// Rows per block of the pass: the oracle's and the models' set-up per call (K transposed, V as
// float32, the key facts) is paid once per block; 1,024 rows of 128 columns hold 2^17 elements.
constexpr int64_t kBlockRows = 1024;

// (B, H, S, D) view of a rank 2, 3 or 4 tensor.
struct View4 {
  int64_t b = 1, h = 1, s = 0, d = 0;
};

View4 ViewOf(const std::vector<int64_t>& shape) {
  View4 v;
  const size_t r = shape.size();
  v.s = shape[r - 2];
  v.d = shape[r - 1];
  if (r >= 3) v.h = shape[r - 3];
  if (r == 4) v.b = shape[0];
  return v;
}

class AttentionAuditOp : public EnclosureOp {
 public:
  AttentionAuditOp(const AttentionAuditInput& in, const AuditOptions& options) : in_(in), options_(options) {}

  absl::Status Init();

  const char* Name() const override { return "attention"; }
  bool AggregateGate() const override { return true; }
  int64_t BlockEnd(int64_t e0) const override {
    const int64_t head_elems = q_.s * dv_;
    const int64_t head_end = (e0 / head_elems + 1) * head_elems;
    return std::min(head_end, e0 + kBlockRows * dv_);
  }
  absl::Status EmulateBlock(int64_t e0, int64_t e1, std::vector<std::vector<Emulated>>& emu) override;
  Emulated EmulateOne(int64_t e, size_t p, OpScratch& s) const override;
  double AbsSum(int64_t e, OpScratch& s) const override;
  std::string Diagnose(int64_t e, size_t p, OpScratch& s, const ExactFacts& x, uint64_t y,
                       double bound) const override;
  // Every element's correctly rounded value in the output's format (ExactAttention).
  absl::Status ExactAll(std::vector<uint64_t>& bits) const;
  // The --lse tensor's classes against platform `name` into a (audit.h AuditResult::LseAudit);
  // a platform without an LSE: against correctly-rounded, saying so in notes.
  absl::Status AuditLse(const std::string& name, AuditResult::LseAudit& a, std::vector<std::string>& notes) const;
  // Every element of the one platform (a model): its emulated bits (the model's output format)
  // and enclosure [lo, hi] (EmulateAttention).
  absl::Status EmulateAll(std::vector<uint64_t>& bits, std::vector<double>& lo, std::vector<double>& hi) const;

 private:
  ExactEnclosure ExactOutsideBlock(int64_t e) const override;
  // A head's problem (its mask materialized into `mask` / `keep`).
  struct Head {
    AttentionProblem p;
    std::vector<double> mask;
    std::vector<uint8_t> keep;
  };
  void MakeHead(int64_t head, Head& h, bool abs_v = false, bool with_mask = true) const;
  // Query row `row` of `head` alone (s_q = 1): its mask row with the causal mask (when `causal`)
  // folded in, as h.keep (boolean or no mask) or h.mask (additive), S_k entries. The listed
  // elements' evidence and diagnoses use it: O(S_k) per element, not the head's S_q x S_k mask.
  void RowHead(int64_t head, int64_t row, bool causal, Head& h) const;
  // The rows with no attended key (mask and causal): how many, each platform's convention there
  // and what the output holds there, as a note.
  void NoteFullyMaskedRows();
  // Rows [r0, r1) of `head` against platform p (exact enclosures always; the platform's
  // emulated values when emu is non-null).
  absl::Status Rows(const Head& h, int64_t r0, int64_t r1, std::vector<ExactEnclosure>& exact,
                    size_t p, std::vector<Emulated>* emu, bool count_stats = false) const;
  // With --lse, the pass's by-product: each row's exact LSE, correctly rounded LSE and each
  // model's emulated LSE with its enclosure (per global row: head * S_q + row), for AuditLse.
  struct LseStash {
    int64_t row0 = 0;  // The global row of the block's first row (set by EmulateBlock).
    std::vector<ExactEnclosure> exact;
    std::vector<uint64_t> cr;
    std::vector<std::vector<uint64_t>> bits;  // Per platform (models with formats.lse).
    std::vector<std::vector<double>> lo, hi;
  };
  // The same for every platform (or those in `only`) into emu[p], the oracle run once (and the
  // LSE's into `lse` when given).
  absl::Status RowsAll(const Head& h, int64_t r0, int64_t r1, std::vector<ExactEnclosure>& exact,
                       std::vector<std::vector<Emulated>>* emu, bool count_stats,
                       const std::vector<size_t>* only = nullptr, LseStash* lse = nullptr) const;

  const AttentionAuditInput& in_;
  const AuditOptions& options_;
  View4 q_, k_, v_;
  int64_t dv_ = 0, group_ = 1;
  std::vector<double> qd_, kd_, vd_, vabs_, maskd_;
  std::vector<int64_t> mask_shape4_;  // Broadcast (1 or full) per dimension of (B, H, S_q, S_k).
  bool bool_mask_ = false;
  std::vector<composite::AttentionModel> catalog_;
  std::vector<const composite::AttentionModel*> platforms_;  // nullptr: correctly rounded.
  // The current block's head and its problem (its spans point into it: never copied); its
  // enclosures are EnclosureOp's.
  int64_t block_head_index_ = -1;
  Head block_head_;
  // Under auto the pipeline runs the pass a second time when the best-explaining platform is not
  // the first (audit_op.h RunAudit); the first pass's blocks (exact enclosures and every
  // platform's values) are kept for it when they fit kCacheBytes, so that the oracle and every
  // emulation run once. Each block is released as the second pass takes it.
  struct CachedBlock {
    int64_t e1 = 0;
    std::vector<ExactEnclosure> exact;
    std::vector<std::vector<Emulated>> emu;
  };
  static constexpr int64_t kCacheBytes = int64_t{1} << 30;
  bool cache_on_ = false;
  std::map<int64_t, CachedBlock> cache_;
  AttentionStats stats_;
  bool stats_noted_ = false;
  LseStash lse_stash_;
  // Diagnose's "softmax over the wrong axis": per key j of one head, the maximum and the sum of
  // e^(s_ij - max) over the queries i (computed once per head that has a listed element).
  struct ColumnSoftmax {
    int64_t head = -1;
    std::vector<double> max, sum;
  };
  mutable ColumnSoftmax columns_;
  // The head's column statistics into columns_ (false when the head is too large to scan).
  bool ColumnStats(int64_t head) const;
  // Row `row` of `head`'s scores s_j (scale q.k_j + mask; -inf where not attended) in binary64.
  void RowScores(const Head& h, int64_t row, std::vector<double>& s) const;
};

absl::Status DecodeAll(const Tensor& t, std::vector<double>& out) {
  out.resize(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) out[static_cast<size_t>(i)] = ToDouble(*t.format, t.Bits(i));
  return absl::OkStatus();
}

absl::Status AttentionAuditOp::Init() {
  if (in_.q == nullptr || in_.k == nullptr || in_.v == nullptr || in_.out == nullptr) {
    return absl::InvalidArgumentError("audit attention needs --q, --k, --v and --out");
  }
  for (const auto& [t, role] : {std::pair{in_.q, "Q"}, {in_.k, "K"}, {in_.v, "V"}, {in_.out, "the output"}}) {
    if (absl::Status s = CheckFloat(*t, role); !s.ok()) return s;
  }
  const Tensor &Q = *in_.q, &K = *in_.k, &V = *in_.v, &O = *in_.out;
  const size_t rank = Q.shape.size();
  if (rank < 2 || rank > 4) {
    return absl::InvalidArgumentError(Cat(Q.source, ": Q has shape ", ShapeText(Q.shape),
                                          "; expected (S, D), (H, S, D) or (B, H, S, D)"));
  }
  for (const auto& [t, role] : {std::pair{in_.k, "K"}, {in_.v, "V"}, {in_.out, "the output"}}) {
    if (t->shape.size() != rank) {
      return absl::InvalidArgumentError(Cat(t->source, ": ", role, " has shape ", ShapeText(t->shape),
                                            ", expected rank ", rank, " as Q's ", ShapeText(Q.shape)));
    }
  }
  q_ = ViewOf(Q.shape);
  k_ = ViewOf(K.shape);
  v_ = ViewOf(V.shape);
  if (q_.d != k_.d) {
    return absl::InvalidArgumentError(Cat("D of Q (", q_.d, ", ", Q.source, ") and of K (", k_.d, ", ",
                                          K.source, ") differ"));
  }
  if (k_.s != v_.s) {
    return absl::InvalidArgumentError(Cat("S of K (", k_.s, ", ", K.source, ") and of V (", v_.s, ", ",
                                          V.source, ") differ"));
  }
  if (k_.h != v_.h || q_.b != k_.b || q_.b != v_.b) {
    return absl::InvalidArgumentError(Cat("K ", ShapeText(K.shape), " and V ", ShapeText(V.shape),
                                          " must have Q's batch (", q_.b, ") and the same number of heads"));
  }
  if (k_.h < 1 || q_.h % k_.h != 0) {
    return absl::InvalidArgumentError(Cat("heads not divisible: Q has ", q_.h, " heads, K and V have ", k_.h,
                                          " (grouped-query attention needs a multiple)"));
  }
  if (q_.d < 1 || v_.d < 1) return absl::InvalidArgumentError("D of Q, K and V must be >= 1");
  group_ = q_.h / k_.h;
  dv_ = v_.d;
  std::vector<int64_t> want = Q.shape;
  want[rank - 1] = dv_;
  if (O.shape != want) {
    return absl::InvalidArgumentError(Cat(O.source, ": the output has shape ", ShapeText(O.shape), ", expected ",
                                          ShapeText(want), " (Q's with V's last dimension)"));
  }
  if (in_.lse != nullptr) {  // The LSE: Q's shape without D.
    if (absl::Status s = CheckFloat(*in_.lse, "the LSE"); !s.ok()) return s;
    const std::vector<int64_t> want_lse(Q.shape.begin(), Q.shape.end() - 1);
    if (in_.lse->shape != want_lse) {
      return absl::InvalidArgumentError(Cat(in_.lse->source, ": the LSE has shape ", ShapeText(in_.lse->shape),
                                            ", expected ", ShapeText(want_lse), " (Q's ", ShapeText(Q.shape),
                                            " without D)"));
    }
  }
  if (in_.scale.has_value() && !(std::isfinite(*in_.scale) && *in_.scale != 0)) {
    return absl::InvalidArgumentError(Cat("--scale ", Num(*in_.scale), ": must be finite and non-zero"));
  }
  if (in_.mask != nullptr) {
    const Tensor& M = *in_.mask;
    const bool is_int = M.dtype == "uint8" || M.dtype == "int8";
    if (!is_int && (M.format == nullptr || !IsFloat(*M.format))) {
      return absl::InvalidArgumentError(Cat(M.source, ": the mask has dtype ", M.dtype,
                                            "; expected a float (additive) or uint8/int8 (boolean: non-zero attends)"));
    }
    bool_mask_ = is_int;
    const std::vector<int64_t> full = {q_.b, q_.h, q_.s, k_.s};
    if (M.shape.size() < 2 || M.shape.size() > 4) {
      return absl::InvalidArgumentError(Cat(M.source, ": the mask has shape ", ShapeText(M.shape),
                                            "; expected (S_q, S_k) = (", q_.s, ", ", k_.s,
                                            ") or a shape that broadcasts to (B, H, S_q, S_k) = ", ShapeText(full)));
    }
    mask_shape4_.assign(4, 1);
    const size_t off = 4 - M.shape.size();
    for (size_t dgt = 0; dgt < M.shape.size(); ++dgt) {
      const int64_t m = M.shape[dgt], f = full[off + dgt];
      if (m != f && m != 1) {
        return absl::InvalidArgumentError(Cat(M.source, ": the mask has shape ", ShapeText(M.shape),
                                              ", which does not broadcast to (B, H, S_q, S_k) = ", ShapeText(full)));
      }
      mask_shape4_[off + dgt] = m;
    }
    maskd_.resize(static_cast<size_t>(M.size()));
    for (int64_t i = 0; i < M.size(); ++i) {
      maskd_[static_cast<size_t>(i)] = bool_mask_ ? (M.Bits(i) != 0 ? 1.0 : 0.0) : ToDouble(*M.format, M.Bits(i));
    }
  }
  (void)DecodeAll(Q, qd_);
  (void)DecodeAll(K, kd_);
  (void)DecodeAll(V, vd_);
  vabs_.resize(vd_.size());
  for (size_t i = 0; i < vd_.size(); ++i) vabs_[i] = std::fabs(vd_[i]);
  // Platforms: "correctly-rounded" and the attention models.
  const std::string models_dir = options_.attention_models_dir.empty() ? SourceDataPath(DataItem::kAttentionModels)
                                                                       : options_.attention_models_dir;
  absl::StatusOr<std::vector<composite::AttentionModel>> loaded = composite::LoadAttentionModels(models_dir);
  if (!loaded.ok()) return loaded.status();
  catalog_ = *std::move(loaded);
  if (options_.platforms.empty()) {
    return absl::InvalidArgumentError(Cat("no platform given: name one or more (--platform P[,P...]), ",
                                          kCorrectlyRounded, ", or auto (the attention models are in ", models_dir, ")"));
  }
  const auto add = [&](const composite::AttentionModel* m) {
    for (const composite::AttentionModel* have : platforms_) {
      if (have == m) return;
    }
    AuditPlatform p;
    p.name = m == nullptr ? kCorrectlyRounded : m->name;
    if (m == nullptr) {
      p.hash = HexHash(Fnv1a(kCorrectlyRounded));
    } else {
      p.hash = TextFileHash(Cat(models_dir, "/", m->name, ".toml"));
    }
    setup_.platforms.push_back(std::move(p));
    platforms_.push_back(m);
  };
  for (const std::string& name : options_.platforms) {
    if (name == "auto") {
      add(nullptr);
      for (const composite::AttentionModel& m : catalog_) {
        if (m.input == Q.format && m.output == O.format) add(&m);
      }
      continue;
    }
    if (name == kCorrectlyRounded) {
      add(nullptr);
      continue;
    }
    const composite::AttentionModel* found = nullptr;
    std::vector<std::string> names = {kCorrectlyRounded};
    for (const composite::AttentionModel& m : catalog_) {
      names.push_back(m.name);
      if (m.name == name) found = &m;
    }
    if (found == nullptr) {
      return absl::InvalidArgumentError(Cat("--platform: no attention platform '", EscapeText(name, 200), "' (valid: ",
                                            Join(names, " "), ")"));
    }
    if (found->input != Q.format) {
      return absl::InvalidArgumentError(Cat("Q is ", Q.format->name, " but platform ", name, " takes ",
                                            found->input->name, " inputs"));
    }
    add(found);
  }
  for (const composite::AttentionModel* m : platforms_) {
    if (m == nullptr) continue;
    if (m->output != O.format) {
      setup_.notes.push_back(Cat("the output is ", O.format->name, " while ", m->name, " writes ", m->output->name,
                                 ": emulated values and bounds converted with ", RoundingName(in_.out_rounding)));
    }
    if (!m->unconfirmed.empty()) {
      setup_.notes.push_back(Cat(m->name, ": unconfirmed (no real output confirms): ", Join(m->unconfirmed, ", ")));
    }
  }
  if (in_.lse != nullptr) {
    const size_t rows = static_cast<size_t>(q_.b * q_.h * q_.s);
    lse_stash_.exact.assign(rows, ExactEnclosure{});
    lse_stash_.cr.assign(rows, 0);
    lse_stash_.bits.assign(platforms_.size(), {});
    lse_stash_.lo.assign(platforms_.size(), {});
    lse_stash_.hi.assign(platforms_.size(), {});
    for (size_t p = 0; p < platforms_.size(); ++p) {
      if (platforms_[p] == nullptr || platforms_[p]->lse_format == nullptr) continue;
      lse_stash_.bits[p].assign(rows, 0);
      lse_stash_.lo[p].assign(rows, NAN);
      lse_stash_.hi[p].assign(rows, NAN);
    }
  }
  NoteFullyMaskedRows();
  const int64_t cache_bytes = O.size() * static_cast<int64_t>(sizeof(ExactEnclosure) +
                                                             platforms_.size() * sizeof(Emulated));
  cache_on_ = options_.platforms[0] == "auto" && platforms_.size() > 1 && cache_bytes <= kCacheBytes;
  setup_.out = &O;
  setup_.out_format = O.format;
  setup_.out_shape = O.shape;
  setup_.elements = O.size();
  setup_.k = k_.s;
  setup_.progress_label = "attention elements";
  setup_.input_format = std::string(Q.format->name);
  setup_.formula = Cat("out = softmax(scale Q K^T", in_.mask != nullptr ? (bool_mask_ ? " masked by M" : " + M") : "",
                       in_.causal ? ", causal (top-left)" : "", ") V per head; scale = ",
                       in_.scale.has_value() ? Num(*in_.scale) : Cat("1/sqrt(", q_.d, ") exactly"),
                       "; S_q = ", q_.s, ", S_k = ", k_.s, ", D = ", q_.d, ", D_v = ", dv_, ", heads ", q_.h,
                       group_ > 1 ? Cat(" (", k_.h, " K/V heads, head h uses K/V head h / ", group_, ")") : "",
                       "; exact = the real value, fully masked rows NaN");
  NoteBf16Fit(O, "the output", setup_.notes);
  AddFileProvenance(setup_.provenance, "Q", Q);
  AddFileProvenance(setup_.provenance, "K", K);
  AddFileProvenance(setup_.provenance, "V", V);
  if (in_.mask != nullptr) AddFileProvenance(setup_.provenance, "mask", *in_.mask);
  AddFileProvenance(setup_.provenance, "out", O);
  if (in_.lse != nullptr) AddFileProvenance(setup_.provenance, "lse", *in_.lse);
  setup_.provenance.emplace_back("scale", in_.scale.has_value() ? Num(*in_.scale) : "1/sqrt(D)");
  setup_.provenance.emplace_back("causal", in_.causal ? "true" : "false");
  setup_.provenance.emplace_back("tool", ToolVersion());
  return absl::OkStatus();
}

void AttentionAuditOp::NoteFullyMaskedRows() {
  if (in_.mask == nullptr) return;  // Top-left causal rows always attend key 0.
  const std::vector<int64_t>& ms = mask_shape4_;
  const FormatSpec& of = *in_.out->format;
  int64_t rows = 0, nan_rows = 0, zero_rows = 0;
  for (int64_t b = 0; b < q_.b; ++b) {
    for (int64_t hq = 0; hq < q_.h; ++hq) {
      for (int64_t i = 0; i < q_.s; ++i) {
        bool any = false;
        const int64_t jmax = in_.causal ? std::min(k_.s, i + 1) : k_.s;
        for (int64_t j = 0; j < jmax && !any; ++j) {
          const int64_t at = (((ms[0] == 1 ? 0 : b) * ms[1] + (ms[1] == 1 ? 0 : hq)) * ms[2] + (ms[2] == 1 ? 0 : i)) *
                                 ms[3] + (ms[3] == 1 ? 0 : j);
          const double m = maskd_[static_cast<size_t>(at)];
          any = bool_mask_ ? m != 0 : m != -INFINITY;
        }
        if (any) continue;
        ++rows;
        const int64_t e0 = ((b * q_.h + hq) * q_.s + i) * dv_;
        bool all_nan = true, all_zero = true;
        for (int64_t c = 0; c < dv_; ++c) {
          const uint64_t y = in_.out->Bits(e0 + c);
          all_nan = all_nan && IsNanBits(of, y);
          all_zero = all_zero && !IsNanBits(of, y) && ToDouble(of, y) == 0;
        }
        nan_rows += all_nan ? 1 : 0;
        zero_rows += all_zero ? 1 : 0;
      }
    }
  }
  if (rows == 0) return;
  std::vector<std::string> conv;
  for (const composite::AttentionModel* m : platforms_) {
    conv.push_back(m == nullptr ? Cat(kCorrectlyRounded, " nan (the exact value, 0/0)")
                                : Cat(m->name, " ", FullyMaskedRowsName(m->fully_masked)));
  }
  setup_.notes.push_back(Cat(rows, " of ", q_.b * q_.h * q_.s, " query rows are fully masked (no attended key; the",
                             " exact value is NaN there, left out of the aggregate gate); the output has NaN in ",
                             nan_rows, " of them, zero in ", zero_rows, ", other values in ",
                             rows - nan_rows - zero_rows, "; conventions: ", Join(conv, ", ")));
}

void AttentionAuditOp::RowHead(int64_t head, int64_t row, bool causal, Head& h) const {
  MakeHead(head, h, false, /*mask=*/false);
  const auto sz = [](int64_t x) { return static_cast<size_t>(x); };
  AttentionProblem& p = h.p;
  p.s_q = 1;
  p.q = p.q.subspan(sz(row * q_.d), sz(q_.d));
  p.causal = false;
  const int64_t b = head / q_.h, hq = head % q_.h;
  const std::vector<int64_t>& ms = mask_shape4_;
  const auto mask_at = [&](int64_t j) {
    return maskd_[sz((((ms[0] == 1 ? 0 : b) * ms[1] + (ms[1] == 1 ? 0 : hq)) * ms[2] + (ms[2] == 1 ? 0 : row)) *
                         ms[3] + (ms[3] == 1 ? 0 : j))];
  };
  if (in_.mask != nullptr && !bool_mask_) {  // The additive values, -inf past the diagonal.
    h.mask.resize(sz(k_.s));
    for (int64_t j = 0; j < k_.s; ++j) h.mask[sz(j)] = causal && j > row ? -INFINITY : mask_at(j);
    p.additive_mask = h.mask;
    return;
  }
  h.keep.resize(sz(k_.s));
  for (int64_t j = 0; j < k_.s; ++j) {
    const bool kept = (in_.mask == nullptr || mask_at(j) != 0) && !(causal && j > row);
    h.keep[sz(j)] = kept ? 1 : 0;
  }
  p.keep_mask = h.keep;
}

void AttentionAuditOp::MakeHead(int64_t head, Head& h, bool abs_v, bool with_mask) const {
  const int64_t b = head / q_.h, hq = head % q_.h, hk = hq / group_;
  const auto sz = [](int64_t x) { return static_cast<size_t>(x); };
  AttentionProblem& p = h.p;
  p = AttentionProblem{};
  p.s_q = q_.s;
  p.s_k = k_.s;
  p.d = q_.d;
  p.d_v = dv_;
  p.q = std::span<const double>(qd_).subspan(sz((b * q_.h + hq) * q_.s * q_.d), sz(q_.s * q_.d));
  p.k = std::span<const double>(kd_).subspan(sz((b * k_.h + hk) * k_.s * k_.d), sz(k_.s * k_.d));
  p.v = std::span<const double>(abs_v ? vabs_ : vd_).subspan(sz((b * v_.h + hk) * v_.s * v_.d), sz(v_.s * v_.d));
  p.scale = in_.scale;
  p.causal = in_.causal;
  if (in_.mask != nullptr && with_mask) {
    const std::vector<int64_t>& ms = mask_shape4_;
    const int64_t mb = ms[0] == 1 ? 0 : b, mh = ms[1] == 1 ? 0 : hq;
    const int64_t n = q_.s * k_.s;
    h.mask.resize(sz(n));
    for (int64_t i = 0; i < q_.s; ++i) {
      for (int64_t j = 0; j < k_.s; ++j) {
        const int64_t at = ((mb * ms[1] + mh) * ms[2] + (ms[2] == 1 ? 0 : i)) * ms[3] + (ms[3] == 1 ? 0 : j);
        h.mask[sz(i * k_.s + j)] = maskd_[sz(at)];
      }
    }
    if (bool_mask_) {
      h.keep.resize(sz(n));
      for (size_t x = 0; x < h.keep.size(); ++x) h.keep[x] = h.mask[x] != 0 ? 1 : 0;
      p.keep_mask = h.keep;
    } else {
      p.additive_mask = h.mask;
    }
  }
}

absl::Status AttentionAuditOp::Rows(const Head& h, int64_t r0, int64_t r1, std::vector<ExactEnclosure>& exact,
                                    size_t p, std::vector<Emulated>* emu, bool count_stats) const {
  std::vector<std::vector<Emulated>> all;
  if (emu == nullptr) return RowsAll(h, r0, r1, exact, nullptr, count_stats);
  std::vector<size_t> only = {p};
  if (absl::Status s = RowsAll(h, r0, r1, exact, &all, count_stats, &only); !s.ok()) return s;
  *emu = std::move(all[p]);
  return absl::OkStatus();
}

// The exact values (one oracle pass, with the correctly rounded bits, and P|V| from the same pass
// when a model is among the platforms wanted: AttentionOutputs::abs_enclosure), then each wanted
// platform's values.
absl::Status AttentionAuditOp::RowsAll(const Head& h, int64_t r0, int64_t r1, std::vector<ExactEnclosure>& exact,
                                       std::vector<std::vector<Emulated>>* emu, bool count_stats,
                                       const std::vector<size_t>* only, LseStash* lse) const {
  const size_t n = static_cast<size_t>((r1 - r0) * dv_);
  exact.assign(n, ExactEnclosure{});
  const FormatSpec& O = *setup_.out_format;
  const int threads = std::max(1, options_.threads);
  std::vector<size_t> wanted;
  if (emu != nullptr) {
    if (only != nullptr) {
      wanted = *only;
    } else {
      for (size_t p = 0; p < platforms_.size(); ++p) wanted.push_back(p);
    }
  }
  bool any_cr = false, any_model = false;
  for (size_t p : wanted) (platforms_[p] == nullptr ? any_cr : any_model) = true;
  std::vector<uint64_t> bits(any_cr ? n : 0);
  std::vector<ExactEnclosure> pv(any_model ? n : 0);
  AttentionOutputs o;
  o.out = &O;
  o.bits = bits;
  o.enclosure = exact;
  o.abs_enclosure = pv;
  const size_t lse_at = lse != nullptr ? static_cast<size_t>(lse->row0) : 0, lse_n = static_cast<size_t>(r1 - r0);
  if (lse != nullptr) {  // The LSE's exact and correctly rounded values in the same oracle pass.
    o.lse_format = in_.lse->format;
    o.lse_bits = std::span<uint64_t>(lse->cr).subspan(lse_at, lse_n);
    o.lse_enclosure = std::span<ExactEnclosure>(lse->exact).subspan(lse_at, lse_n);
  }
  AttentionStats st;
  if (absl::Status s = AttentionRows(h.p, r0, r1, o, &st, threads); !s.ok()) return s;
  if (count_stats) const_cast<AttentionAuditOp*>(this)->stats_ += st;  // EmulateBlock only.
  if (emu == nullptr) return absl::OkStatus();
  emu->resize(platforms_.size());
  // The models among the wanted platforms, emulated together (EmulateAttentionRowsMulti: the
  // work no model changes done once for all of them).
  struct ModelOut {
    size_t p;
    std::vector<uint64_t> bits;
    std::vector<double> lo, hi;
    std::optional<composite::AttentionLseRows> lse;
  };
  std::vector<ModelOut> outs;
  outs.reserve(wanted.size());
  for (size_t p : wanted) {
    std::vector<Emulated>& out = (*emu)[p];
    out.assign(n, Emulated{});
    const composite::AttentionModel* m = platforms_[p];
    if (m == nullptr) {
      for (size_t e = 0; e < n; ++e) {
        const double v = ToDouble(O, bits[e]);
        out[e] = EmulatedFromEnclosure(bits[e], v, v, O, O, in_.out_rounding, exact[e].lo, exact[e].hi);
      }
      continue;
    }
    // A model: its emulated values and enclosures (composite/attention_model.h).
    ModelOut& mo = outs.emplace_back(ModelOut{p, std::vector<uint64_t>(n), std::vector<double>(n),
                                              std::vector<double>(n), std::nullopt});
    if (lse != nullptr && m->lse_format != nullptr) {
      mo.lse = composite::AttentionLseRows{o.lse_enclosure, std::span<uint64_t>(lse->bits[p]).subspan(lse_at, lse_n),
                                           std::span<double>(lse->lo[p]).subspan(lse_at, lse_n),
                                           std::span<double>(lse->hi[p]).subspan(lse_at, lse_n)};
    }
  }
  if (outs.empty()) return absl::OkStatus();
  std::vector<composite::AttentionModelRows> rows;
  for (ModelOut& mo : outs) {
    rows.push_back(composite::AttentionModelRows{platforms_[mo.p], mo.bits, mo.lo, mo.hi, mo.lse ? &*mo.lse : nullptr});
  }
  if (absl::Status s = composite::EmulateAttentionRowsMulti(rows, h.p, r0, r1, pv, exact, threads); !s.ok()) return s;
  for (const ModelOut& mo : outs) {
    std::vector<Emulated>& out = (*emu)[mo.p];
    const composite::AttentionModel* m = platforms_[mo.p];
    for (size_t e = 0; e < n; ++e) {
      out[e] = EmulatedFromEnclosure(mo.bits[e], mo.lo[e], mo.hi[e], *m->output, O, in_.out_rounding, exact[e].lo,
                                     exact[e].hi);
    }
  }
  return absl::OkStatus();
}

absl::Status AttentionAuditOp::EmulateBlock(int64_t e0, int64_t e1, std::vector<std::vector<Emulated>>& emu) {
  if (auto it = cache_.find(e0); it != cache_.end() && it->second.e1 == e1) {
    block_e0_ = e0;
    block_exact_ = std::move(it->second.exact);
    emu = std::move(it->second.emu);
    cache_.erase(it);
    return absl::OkStatus();
  }
  const int64_t head_elems = q_.s * dv_;
  const int64_t head = e0 / head_elems;
  const int64_t r0 = (e0 % head_elems) / dv_, r1 = r0 + (e1 - e0) / dv_;
  if (head != block_head_index_) {  // A head's blocks are consecutive: its mask is made once.
    MakeHead(head, block_head_);
    block_head_index_ = head;
  }
  block_e0_ = e0;
  lse_stash_.row0 = head * q_.s + r0;
  if (absl::Status s = RowsAll(block_head_, r0, r1, block_exact_, &emu, !stats_noted_, nullptr,
                               in_.lse != nullptr ? &lse_stash_ : nullptr);
      !s.ok()) {
    return s;
  }
  if (cache_on_ && !stats_noted_) cache_[e0] = CachedBlock{e1, block_exact_, emu};
  if (e1 == setup_.elements && !stats_noted_) {
    stats_noted_ = true;
    setup_.notes.push_back(Cat("exact values: ", stats_.fast_rows, " rows decided in certified binary64, ",
                               stats_.mpfr_rows, " through MPFR (", stats_.fallback, " undecided elements, ",
                               stats_.special_rows, " special rows)"));
  }
  return absl::OkStatus();
}

ExactEnclosure AttentionAuditOp::ExactOutsideBlock(int64_t e) const {
  const int64_t head_elems = q_.s * dv_;
  const int64_t row = (e % head_elems) / dv_;
  Head h;
  RowHead(e / head_elems, row, in_.causal, h);
  std::vector<ExactEnclosure> exact;
  return Rows(h, 0, 1, exact, platforms_.size(), nullptr).ok() ? exact[static_cast<size_t>(e % dv_)]
                                                                : ExactEnclosure{NAN, NAN, NAN, false};
}

Emulated AttentionAuditOp::EmulateOne(int64_t e, size_t p, OpScratch&) const {
  const int64_t head_elems = q_.s * dv_;
  const int64_t row = (e % head_elems) / dv_;
  Head h;
  RowHead(e / head_elems, row, in_.causal, h);
  std::vector<ExactEnclosure> exact;
  std::vector<Emulated> emu;
  if (!Rows(h, 0, 1, exact, p, &emu).ok()) return Emulated{0, NAN};
  return emu[static_cast<size_t>(e % dv_)];
}

double AttentionAuditOp::AbsSum(int64_t e, OpScratch&) const {
  const int64_t head_elems = q_.s * dv_;
  const int64_t row = (e % head_elems) / dv_;
  Head h;
  RowHead(e / head_elems, row, in_.causal, h);
  h.p.v = std::span<const double>(vabs_).subspan(static_cast<size_t>(h.p.v.data() - vd_.data()), h.p.v.size());
  std::vector<ExactEnclosure> exact;
  if (!Rows(h, 0, 1, exact, platforms_.size(), nullptr).ok()) return NAN;
  return exact[static_cast<size_t>(e % dv_)].hi;  // sum_j P_j |V_jc|.
}

std::string AttentionAuditOp::Diagnose(int64_t e, size_t, OpScratch&, const ExactFacts& facts, uint64_t y,
                                       double bound) const {
  const FormatSpec& out = *setup_.out_format;
  const double yd = ToDouble(out, y), ex = facts.x;
  const Relation rel(out, yd, bound);
  if (std::string d = rel.ZeroOrSignFlip(ex, "exact"); !d.empty()) return d;
  const int64_t head_elems = q_.s * dv_;
  const int64_t head = e / head_elems, row = (e % head_elems) / dv_, col = e % dv_;
  // A variant of the problem: does its exact value (rounded to the output, give or take the
  // platform's bound) give y? Each variant is the element's row alone (RowHead: O(S_k), where the
  // whole head's mask would be O(S_q S_k) per variant and listed element).
  const auto variant = [&](bool causal, const std::function<void(Head&)>& change) {
    Head h;
    RowHead(head, row, causal, h);
    change(h);
    std::vector<ExactEnclosure> enc(static_cast<size_t>(dv_));
    AttentionOutputs o;
    o.enclosure = enc;
    if (!AttentionRows(h.p, 0, 1, o, nullptr).ok()) return false;
    return rel.Holds(enc[static_cast<size_t>(col)].nearest);
  };
  const auto same = [](Head&) {};
  const double scale = in_.scale.has_value() ? *in_.scale : 1.0 / std::sqrt(static_cast<double>(q_.d));
  if (variant(in_.causal, [&](Head& h) { h.p.scale = 1.0; })) return "the scale not applied (scale 1)";
  if (variant(in_.causal, [&](Head& h) { h.p.scale = scale * scale; })) return "the scale applied twice (scale^2)";
  if (variant(!in_.causal, same)) {
    return in_.causal ? "no causal mask (every key attended)" : "a causal mask applied where none is expected";
  }
  if (!in_.causal && q_.s != k_.s && variant(true, same)) return "a causal mask applied";
  if (group_ > 1) {
    const int64_t hq = head % q_.h, b = head / q_.h;
    const int64_t other = hq % k_.h;  // repeat (tile) instead of repeat_interleave.
    if (other != hq / group_ &&
        variant(in_.causal, [&](Head& h) {
          h.p.k = std::span<const double>(kd_).subspan(static_cast<size_t>((b * k_.h + other) * k_.s * k_.d),
                                                       static_cast<size_t>(k_.s * k_.d));
          h.p.v = std::span<const double>(vd_).subspan(static_cast<size_t>((b * v_.h + other) * v_.s * v_.d),
                                                       static_cast<size_t>(v_.s * v_.d));
        })) {
      return Cat("the wrong GQA head mapping: K/V head ", other, " (h mod H_kv) instead of ", hq / group_,
                 " (h / group)");
    }
  }
  // A key block dropped: the last or the first block of T keys (T = 64 ... 512) of the row.
  for (int64_t t : {64, 128, 256, 512}) {
    if (t >= k_.s) break;
    const int64_t last = in_.causal ? std::min(row, k_.s - 1) : k_.s - 1;
    for (const int64_t start : {int64_t{0}, (last / t) * t}) {
      if (variant(in_.causal, [&](Head& h) {
            for (int64_t j = start; j < std::min(k_.s, start + t); ++j) {
              if (!h.keep.empty()) h.keep[static_cast<size_t>(j)] = 0;
              if (!h.mask.empty()) h.mask[static_cast<size_t>(j)] = -INFINITY;
            }
          })) {
        return Cat("a key block dropped: keys [", start, ", ", std::min(k_.s, start + t), ") (block of ", t, ")");
      }
    }
  }
  // A key block counted twice: ln 2 added to its keys' scores through an additive mask doubles
  // their weights (to within 2^-52: the oracle takes the mask as given).
  const auto additive = [&](Head& h) {
    if (!h.mask.empty()) return;
    h.mask.assign(static_cast<size_t>(k_.s), 0.0);
    for (size_t j = 0; j < h.mask.size(); ++j) {
      if (!h.keep.empty() && h.keep[j] == 0) h.mask[j] = -INFINITY;
    }
    h.p.keep_mask = {};
    h.keep.clear();
    h.p.additive_mask = h.mask;
  };
  for (int64_t t : {64, 128, 256, 512}) {
    if (t >= k_.s) break;
    const int64_t last = in_.causal ? std::min(row, k_.s - 1) : k_.s - 1;
    for (const int64_t start : {int64_t{0}, (last / t) * t}) {
      if (variant(in_.causal, [&](Head& h) {
            additive(h);
            for (int64_t j = start; j < std::min(k_.s, start + t); ++j) h.mask[static_cast<size_t>(j)] += std::numbers::ln2;
          })) {
        return Cat("a key block counted twice: keys [", start, ", ", std::min(k_.s, start + t), ") (block of ", t,
                   ")");
      }
    }
  }
  // K not transposed (Q K instead of Q K^T), expressible where K is square (S_k = D).
  if (k_.s == k_.d) {
    Head base;
    RowHead(head, row, in_.causal, base);
    std::vector<double> kt(base.p.k.size());
    for (int64_t j = 0; j < k_.s; ++j) {
      for (int64_t d = 0; d < k_.d; ++d) kt[static_cast<size_t>(j * k_.d + d)] = base.p.k[static_cast<size_t>(d * k_.d + j)];
    }
    if (variant(in_.causal, [&](Head& h) { h.p.k = kt; })) return "K not transposed (Q K instead of Q K^T)";
  }
  // Evaluations that are not a variant of the problem: computed here in binary64 for the row.
  {
    Head h;
    RowHead(head, row, in_.causal, h);
    std::vector<double> sc;
    RowScores(h, row, sc);
    double m = -INFINITY;
    for (double x : sc) m = std::max(m, x);
    if (m > -INFINITY) {
      // The row sum accumulated in bfloat16 (each weight and each partial sum rounded), the
      // numerator in binary64.
      const FormatSpec& bf = BFloat16();
      double l = 0, num = 0;
      for (size_t j = 0; j < sc.size(); ++j) {
        if (sc[j] == -INFINITY) continue;
        const double w = std::exp(sc[j] - m);
        l = ToDouble(bf, DoubleToBits(bf, l + ToDouble(bf, DoubleToBits(bf, w))));
        num += w * h.p.v[j * static_cast<size_t>(dv_) + static_cast<size_t>(col)];
      }
      if (l > 0 && rel.Holds(num / l)) return "the row sum accumulated in bfloat16";
      // Softmax over the wrong axis: normalized over the queries (per key) instead of the keys.
      // Its column statistics scan the whole head (S_q S_k D products), so only for a gross
      // error (beyond 4 bounds and 4 half-ulps): a near miss of a rounding is not this bug.
      const double gross = 4 * std::max(std::isfinite(bound) ? bound : 0.0, HalfUlpAt(out, std::fabs(ex)));
      if (std::isfinite(ex) && std::fabs(yd - ex) > gross && ColumnStats(head)) {
        double y2 = 0;
        for (size_t j = 0; j < sc.size(); ++j) {
          if (sc[j] == -INFINITY || columns_.sum[j] == 0) continue;
          y2 += std::exp(sc[j] - columns_.max[j]) / columns_.sum[j] *
                h.p.v[j * static_cast<size_t>(dv_) + static_cast<size_t>(col)];
        }
        if (rel.Holds(y2)) return "softmax over the wrong axis (normalized over the queries, not the keys)";
      }
    }
  }
  return rel.PowerOfTwoOrNone(ex);
}

void AttentionAuditOp::RowScores(const Head& h, int64_t row, std::vector<double>& s) const {
  const AttentionProblem& p = h.p;
  const size_t d = static_cast<size_t>(p.d), sk = static_cast<size_t>(p.s_k);
  const double scale = p.scale.has_value() ? *p.scale : 1.0 / std::sqrt(static_cast<double>(p.d));
  // h holds one row (RowHead: s_q = 1, row-sized masks) or the head (MakeHead: s_q rows).
  const size_t r = p.s_q == 1 ? 0 : static_cast<size_t>(row);
  s.assign(sk, -INFINITY);
  for (size_t j = 0; j < sk; ++j) {
    if (p.causal && static_cast<int64_t>(j) > row) continue;
    if (!p.keep_mask.empty() && p.keep_mask[r * sk + j] == 0) continue;
    double add = 0;
    if (!p.additive_mask.empty()) {
      add = p.additive_mask[r * sk + j];
      if (add == -INFINITY) continue;
    }
    double dot = 0;
    for (size_t c = 0; c < d; ++c) dot += p.q[r * d + c] * p.k[j * d + c];
    s[j] = scale * dot + add;
  }
}

bool AttentionAuditOp::ColumnStats(int64_t head) const {
  if (columns_.head == head) return true;
  // One pass over the head's S_q x S_k scores (D products each): at most 2^32 products.
  if (static_cast<double>(q_.s) * static_cast<double>(k_.s) * static_cast<double>(q_.d) > 0x1p32) return false;
  Head h;
  MakeHead(head, h);
  columns_.head = -1;
  columns_.max.assign(static_cast<size_t>(k_.s), -INFINITY);
  columns_.sum.assign(static_cast<size_t>(k_.s), 0.0);
  std::vector<double> sc;
  for (int64_t i = 0; i < q_.s; ++i) {
    RowScores(h, i, sc);
    for (size_t j = 0; j < sc.size(); ++j) {  // Online per column: rescaled when the maximum grows.
      if (sc[j] == -INFINITY) continue;
      if (sc[j] > columns_.max[j]) {
        columns_.sum[j] = columns_.sum[j] * std::exp(columns_.max[j] - sc[j]) + 1;
        columns_.max[j] = sc[j];
      } else {
        columns_.sum[j] += std::exp(sc[j] - columns_.max[j]);
      }
    }
  }
  columns_.head = head;
  return true;
}

absl::Status AttentionAuditOp::ExactAll(std::vector<uint64_t>& bits) const {
  bits.assign(static_cast<size_t>(setup_.elements), 0);
  const int64_t heads = q_.b * q_.h, head_elems = q_.s * dv_;
  for (int64_t hd = 0; hd < heads; ++hd) {
    Head h;
    MakeHead(hd, h);
    AttentionOutputs o;
    o.out = setup_.out_format;
    o.bits = std::span<uint64_t>(bits).subspan(static_cast<size_t>(hd * head_elems), static_cast<size_t>(head_elems));
    if (absl::Status s = AttentionRows(h.p, 0, q_.s, o, nullptr, std::max(1, options_.threads)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status AttentionAuditOp::AuditLse(const std::string& name, AuditResult::LseAudit& a,
                                        std::vector<std::string>& notes) const {
  const Tensor& L = *in_.lse;
  const FormatSpec& Lf = *L.format;
  a = AuditResult::LseAudit{};
  a.run = true;
  a.format = std::string(Lf.name);
  a.shape = L.shape;
  // The platform: the primary one when it writes an LSE, else correctly-rounded.
  const composite::AttentionModel* m = nullptr;
  for (size_t p = 0; p < platforms_.size(); ++p) {
    if (setup_.platforms[p].name == name) m = platforms_[p];
  }
  if (m != nullptr && m->lse_format == nullptr) {
    notes.push_back(Cat(m->name, " writes no LSE (no formats.lse): the LSE is classed against ",
                        kCorrectlyRounded));
    m = nullptr;
  }
  a.platform = m != nullptr ? m->name : kCorrectlyRounded;
  const double fm_lse = m != nullptr ? m->fully_masked_lse : -INFINITY;
  a.convention = Cat(a.platform, " writes ", Num(fm_lse), " on a fully masked row (the exact value is log 0 = -inf)");
  size_t pm = 0;  // The platform's index in the stash.
  for (size_t p = 0; p < platforms_.size(); ++p) {
    if (platforms_[p] == m) pm = p;
  }
  const LseStash& st = lse_stash_;
  const int64_t heads = q_.b * q_.h, rows = q_.s;
  const size_t nr = static_cast<size_t>(rows);
  struct Listed {
    AuditElement e;
    double key;  // Unexplained first (inf), then by err / bound.
  };
  std::vector<Listed> listed;
  for (int64_t hd = 0; hd < heads; ++hd) {
    const size_t h0 = static_cast<size_t>(hd * rows);
    const std::span<const ExactEnclosure> lex = std::span<const ExactEnclosure>(st.exact).subspan(h0, nr);
    const std::span<const uint64_t> cr = std::span<const uint64_t>(st.cr).subspan(h0, nr);
    const std::span<const uint64_t> lb =
        m != nullptr ? std::span<const uint64_t>(st.bits[pm]).subspan(h0, nr) : std::span<const uint64_t>();
    const std::span<const double> llo =
        m != nullptr ? std::span<const double>(st.lo[pm]).subspan(h0, nr) : std::span<const double>();
    const std::span<const double> lhi =
        m != nullptr ? std::span<const double>(st.hi[pm]).subspan(h0, nr) : std::span<const double>();
    for (size_t i = 0; i < nr; ++i) {
      const int64_t at = hd * rows + static_cast<int64_t>(i);
      const uint64_t y = L.Bits(at);
      const ExactEnclosure& ex = lex[i];
      if (std::isinf(ex.nearest) && ex.nearest < 0) ++a.fully_masked_rows;
      Emulated em;
      if (m != nullptr) {
        em = EmulatedFromEnclosure(lb[i], llo[i], lhi[i], *m->lse_format, Lf, in_.out_rounding, ex.lo, ex.hi);
      } else {
        const double v = ToDouble(Lf, cr[i]);
        em = EmulatedFromEnclosure(cr[i], v, v, Lf, Lf, in_.out_rounding, ex.lo, ex.hi);
      }
      const double yd = ToDouble(Lf, y), ed = ToDouble(Lf, em.bits);
      // |y - exact| <= |y - nearest| + (hi - lo), rounded up (as the pipeline's).
      const double err = std::isfinite(yd) && std::isfinite(ex.lo) && std::isfinite(ex.hi)
                             ? std::nextafter(std::nextafter(std::fabs(yd - ex.nearest), INFINITY) + (ex.hi - ex.lo),
                                              INFINITY)
                             : NAN;
      AuditClass cls = AuditClass::kUnexplained;
      if (y == em.bits || (std::isnan(yd) && std::isnan(ed))) {
        cls = AuditClass::kIdentical;
      } else if (err <= em.bound) {
        cls = AuditClass::kWithinBound;
      }
      ++a.counts[static_cast<size_t>(cls)];
      if (options_.keep_bounds) {
        a.classes.push_back(static_cast<uint8_t>(cls));
        a.bounds.push_back(em.bound);
      }
      if (cls == AuditClass::kIdentical) continue;
      const double ratio = em.bound > 0 ? err / em.bound : INFINITY;
      const double key = cls == AuditClass::kUnexplained ? INFINITY : ratio;
      if (static_cast<int>(listed.size()) >= options_.max_listed && options_.max_listed >= 0) {
        // Keep the worst max_listed (unexplained first, then by err / bound; ties in index order).
        auto worst = std::min_element(listed.begin(), listed.end(),
                                      [](const Listed& x, const Listed& z) { return x.key < z.key; });
        if (worst == listed.end() || !(key > worst->key)) continue;
        listed.erase(worst);
      }
      AuditElement e;
      e.index = Unflatten(at, L.shape);
      e.cls = cls;
      e.actual_bits = y;
      e.actual = yd;
      e.exact = std::isfinite(ex.nearest) ? ExactHexFloat(Float64(), DoubleToBits(Float64(), ex.nearest, OpEnv{}))
                                          : Num(ex.nearest);
      e.exact_value = ex.nearest;
      e.emulated_bits = em.bits;
      e.emulated = ed;
      e.error_ulp = std::isfinite(ex.nearest) && std::isfinite(yd) ? (yd - ex.nearest) / (2 * HalfUlpAt(Lf, std::fabs(ex.nearest))) : NAN;
      e.error_over_bound = ratio;
      e.bound = em.bound;
      if (cls == AuditClass::kUnexplained) {
        const double ln2 = 0.6931471805599453;
        if (std::isinf(ex.nearest) && ex.nearest < 0 && yd == INFINITY) {
          e.diagnosis = "+inf on a fully masked row: FlashAttention-2's convention (the exact value is -inf)";
        } else if (std::isinf(ex.nearest) && ex.nearest < 0 && yd == -INFINITY) {
          e.diagnosis = "-inf on a fully masked row: the exact log 0 (this platform writes another value)";
        } else if (std::isnan(yd) && std::isfinite(ex.nearest)) {
          e.diagnosis = "NaN where none is expected: uninitialized memory?";
        } else if (std::isfinite(em.bound) && std::fabs(yd - ex.nearest / ln2) <= em.bound / ln2 + 2 * HalfUlpAt(Lf, std::fabs(yd))) {
          e.diagnosis = "the LSE in base 2 (log2 of the sum of 2^(s log2 e): lse / ln 2)";
        } else if (std::isfinite(em.bound) && std::fabs(yd + ex.nearest) <= em.bound + 2 * HalfUlpAt(Lf, std::fabs(yd)) &&
                   std::fabs(ex.nearest) > em.bound) {
          e.diagnosis = "sign flipped (lse = -exact)";
        } else {
          e.diagnosis = "no simple relation found";
        }
      }
      listed.push_back(Listed{std::move(e), key});
    }
  }
  std::stable_sort(listed.begin(), listed.end(), [](const Listed& x, const Listed& z) {
    if (x.key != z.key) return x.key > z.key;
    return x.e.index < z.e.index;
  });
  for (Listed& l : listed) a.elements.push_back(std::move(l.e));
  if (a.counts[static_cast<size_t>(AuditClass::kUnexplained)] > 0) a.verdict = AuditVerdict::kFail;
  notes.push_back(Cat("LSE (", L.source, ", ", Lf.name, " ", ShapeText(L.shape), ") against ", a.platform, ": ",
                        a.counts[0], " identical, ", a.counts[1], " within bound, ", a.counts[3], " unexplained; ",
                        a.fully_masked_rows, " fully masked rows, ", a.convention));
  return absl::OkStatus();
}

absl::Status AttentionAuditOp::EmulateAll(std::vector<uint64_t>& bits, std::vector<double>& lo,
                                          std::vector<double>& hi) const {
  const composite::AttentionModel* m = platforms_.at(0);
  const size_t n = static_cast<size_t>(setup_.elements);
  bits.assign(n, 0);
  lo.assign(n, NAN);
  hi.assign(n, NAN);
  const int64_t heads = q_.b * q_.h, head_elems = q_.s * dv_;
  const int threads = std::max(1, options_.threads);
  for (int64_t hd = 0; hd < heads; ++hd) {
    Head h;
    MakeHead(hd, h);
    const size_t at = static_cast<size_t>(hd * head_elems), len = static_cast<size_t>(head_elems);
    std::vector<ExactEnclosure> exact(len), pv(len);
    AttentionOutputs o;
    o.enclosure = exact;
    o.abs_enclosure = pv;  // P|V| in the same pass.
    if (absl::Status s = AttentionRows(h.p, 0, q_.s, o, nullptr, threads); !s.ok()) return s;
    if (absl::Status s = composite::EmulateAttentionRows(
            *m, h.p, 0, q_.s, pv, exact, std::span<uint64_t>(bits).subspan(at, len),
            std::span<double>(lo).subspan(at, len), std::span<double>(hi).subspan(at, len), threads);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace audit_internal

absl::StatusOr<AttentionEmulation> EmulateAttention(const AttentionAuditInput& in, const std::string& platform,
                                                    const std::string& models_dir, int threads) {
  if (in.q == nullptr || in.k == nullptr || in.v == nullptr) {
    return absl::InvalidArgumentError("emulate attention needs Q, K and V");
  }
  const std::string dir = models_dir.empty() ? SourceDataPath(DataItem::kAttentionModels) : models_dir;
  absl::StatusOr<std::vector<composite::AttentionModel>> models = composite::LoadAttentionModels(dir);
  if (!models.ok()) return models.status();
  const FormatSpec* out_format = nullptr;
  std::vector<std::string> names;
  for (const composite::AttentionModel& m : *models) {
    names.push_back(m.name);
    if (m.name == platform) out_format = m.output;
  }
  if (out_format == nullptr) {
    return absl::InvalidArgumentError(Cat("emulate attention: no attention model '", EscapeText(platform, 200),
                                          "' (valid: ", Join(names, " "),
                                          "; the correctly rounded output is exact attention's)"));
  }
  AttentionEmulation e;
  e.format = out_format;
  e.shape = in.q->shape;
  if (!e.shape.empty() && !in.v->shape.empty()) e.shape.back() = in.v->shape.back();
  absl::StatusOr<Tensor> o = MakeTensor(std::string(out_format->name), e.shape);
  if (!o.ok()) return o.status();
  o->source = "(the emulated output)";
  AttentionAuditInput input = in;
  input.out = &*o;
  AuditOptions options;
  options.platforms = {platform};
  options.attention_models_dir = dir;
  options.threads = threads;
  audit_internal::AttentionAuditOp op(input, options);
  if (absl::Status s = op.Init(); !s.ok()) return s;
  if (absl::Status s = op.EmulateAll(e.bits, e.lo, e.hi); !s.ok()) return s;
  return e;
}

absl::StatusOr<std::vector<uint64_t>> ExactAttention(const AttentionAuditInput& in, const FormatSpec& out,
                                                     int threads) {
  if (in.q == nullptr || in.v == nullptr) return absl::InvalidArgumentError("exact attention needs Q, K and V");
  if (!IsFloat(out) || Precision(out) > 53) {
    return absl::InvalidArgumentError(Cat("exact attention: the output format ", out.name,
                                          " is not a float format of at most 53 bits"));
  }
  std::vector<int64_t> shape = in.q->shape;
  if (!shape.empty() && !in.v->shape.empty()) shape.back() = in.v->shape.back();
  absl::StatusOr<Tensor> o = MakeTensor(std::string(out.name), shape);
  if (!o.ok()) return o.status();
  o->source = "(the exact output)";
  AttentionAuditInput input = in;
  input.out = &*o;
  AuditOptions options;
  options.platforms = {"correctly-rounded"};
  options.threads = threads;
  audit_internal::AttentionAuditOp op(input, options);
  if (absl::Status s = op.Init(); !s.ok()) return s;
  std::vector<uint64_t> bits;
  if (absl::Status s = op.ExactAll(bits); !s.ok()) return s;
  return bits;
}

absl::StatusOr<AuditResult> AuditAttention(const AttentionAuditInput& in, const AuditOptions& options) {
  if (in.lse == nullptr) return audit_internal::RunOp<audit_internal::AttentionAuditOp>(in, options);
  audit_internal::AttentionAuditOp op(in, options);  // With the LSE: its classes after the pass.
  if (absl::Status s = op.Init(); !s.ok()) return s;
  absl::StatusOr<AuditResult> r = audit_internal::RunAudit(op, options);
  if (!r.ok()) return r;
  // The LSE against the primary platform; under auto, when that leaves an LSE element
  // unexplained, against the first other platform that explains every element of out and of
  // the LSE, if one does (so that an output and LSE some preset explains never fail).
  std::vector<std::string> notes;
  if (absl::Status s = op.AuditLse(r->platforms[0].name, r->lse, notes); !s.ok()) return s;
  if (r->lse.verdict == AuditVerdict::kFail && !options.platforms.empty() && options.platforms[0] == "auto") {
    for (size_t p = 1; p < r->platforms.size(); ++p) {
      if (r->platforms[p].counts[static_cast<size_t>(AuditClass::kUnexplained)] > 0) continue;
      AuditResult::LseAudit other;
      std::vector<std::string> other_notes;
      if (absl::Status s = op.AuditLse(r->platforms[p].name, other, other_notes); !s.ok()) return s;
      if (other.verdict != AuditVerdict::kPass) continue;
      notes.push_back(Cat("auto: the LSE is not explained by ", r->platforms[0].name, "; ", r->platforms[p].name,
                          " explains every element of out and of the LSE: the LSE is classed against it"));
      notes.insert(notes.end(), other_notes.begin(), other_notes.end());
      r->lse = std::move(other);
      break;
    }
  }
  r->notes.insert(r->notes.end(), notes.begin(), notes.end());
  if (r->lse.verdict == AuditVerdict::kFail) r->verdict = AuditVerdict::kFail;
  return r;
}

}  // namespace fpconform::reports
