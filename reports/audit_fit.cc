// The audit's fit (reports/AUDIT.md "Fit"): beyond the presets, the parametric families around
// them (accumulation/model_fit.h), ranked by the output elements they reproduce bit for bit.
//
// Search, deterministic (no clock, no thread-count dependence):
//   1. Datapaths: the platforms grouped by every parameter but [chain] (and name, description);
//      per group the member with the most identical elements of the audit is its base.
//   2. Round A, on a pinned sample of options.fit_sample elements: every platform as it is, and
//      SplitKFamily around each base. The candidates with the best sample count (at most 32, in
//      candidate order), narrowed on a pinned sample of 256 elements to the best (at most 8) when
//      the check set is larger, are the finalists; each is checked on the check set (every
//      element when elements * K <= options.fit_check_products, else a pinned sample of that
//      many products).
//   3. Round B around the winner: DatapathFamily (group size, fraction bits, where c enters,
//      input conversion, promotion interval) the same way; a better one becomes the winner, and round A runs once
//      more around it (its split-K family).
// The winner has the most identical elements on the check set; ties are the other finalists with
// the same count. Evaluations run on options.threads threads (candidates x element ranges), each
// element's result depending only on the model and the element.
#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "accumulation/evaluate.h"
#include "accumulation/model_fit.h"
#include "base/str_cat.h"
#include "base/user_file.h"
#include "cases/pinned_random.h"
#include "formats/ops.h"
#include "reports/audit_reduction.h"
#include "reports/parallel_for.h"

namespace fpconform::reports::audit_internal {
namespace {

struct Candidate {
  std::string base;    // Preset name whose datapath (and file) it derives from.
  std::string change;  // "" for the preset itself.
  FitVariant variant;  // variant.model is the model evaluated.
  int64_t sample = -1, check = -1;
};

// Every parameter the file sets but the chain's (and the names): equal keys, one datapath.
std::string DatapathKey(const Model& m) {
  std::string key;
  for (const auto& [k, v] : m.parameters) {
    if (k == "name" || k == "description" || k.rfind("chain.", 0) == 0) continue;
    absl::StrAppend(&key, k, "=", v, ";");
  }
  return key;
}

// Distinct element indices of [0, n), `count` of them (all when count >= n), sorted.
std::vector<int64_t> PinnedSample(int64_t n, int64_t count, uint64_t seed) {
  std::vector<int64_t> out;
  if (count >= n) {
    for (int64_t e = 0; e < n; ++e) out.push_back(e);
    return out;
  }
  PinnedRng rng(seed);
  std::vector<char> taken(static_cast<size_t>(n), 0);
  while (static_cast<int64_t>(out.size()) < count) {
    const int64_t e = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(n)));
    if (taken[static_cast<size_t>(e)]) continue;
    taken[static_cast<size_t>(e)] = 1;
    out.push_back(e);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

absl::Status ReductionOp::Fit(AuditResult& r) const {
  AuditResult::FitResult& fit = r.fit;
  const bool is_auto = !options_.platforms.empty() && options_.platforms[0] == "auto";
  if (options_.fit == AuditOptions::Fit::kOff) return absl::OkStatus();
  if (options_.fit == AuditOptions::Fit::kAuto) {
    if (!is_auto) return absl::OkStatus();
    bool all_identical = false;
    for (const PlatformAudit& p : r.platforms) {
      all_identical |= p.counts[static_cast<int>(AuditClass::kIdentical)] == setup_.elements;
    }
    if (all_identical) return absl::OkStatus();
  }
  if (scaled_ || block_scaled_) {
    fit.skipped = "not with FP8 scales (the fit compares the unscaled model's bits)";
    return absl::OkStatus();
  }
  if (setup_.elements == 0 || setup_.k < 1 || setup_.k > (int64_t{1} << 30)) {
    fit.skipped = "no elements";
    return absl::OkStatus();
  }
  const int k = static_cast<int>(setup_.k);
  const bool has_c = c_format_ != nullptr;
  const FormatSpec& out_format = *setup_.out_format;
  const Tensor& out = *setup_.out;
  const int threads = std::max(1, options_.threads);

  // The audit's identical counts per platform (r.platforms is in setup_ order).
  std::map<std::string, int64_t> identical;
  for (const PlatformAudit& p : r.platforms) {
    identical[p.name] = p.counts[static_cast<int>(AuditClass::kIdentical)];
  }
  // 1. Datapaths and their bases.
  std::map<std::string, size_t> base_of;  // Datapath key -> index into models_.
  std::vector<std::string> key_order;
  for (size_t p = 0; p < models_.size(); ++p) {
    const std::string key = DatapathKey(*models_[p]);
    auto it = base_of.find(key);
    if (it == base_of.end()) {
      base_of[key] = p;
      key_order.push_back(key);
    } else if (identical[models_[p]->name] > identical[models_[it->second]->name]) {
      it->second = p;
    }
  }
  fit.datapaths = static_cast<int64_t>(key_order.size());
  for (const PlatformAudit& p : r.platforms) {
    if (fit.base_best.empty() ||
        p.counts[static_cast<int>(AuditClass::kIdentical)] > identical[fit.base_best]) {
      fit.base_best = p.name;
    }
  }

  // Element evaluation: the model's bits in the output file's format against the output.
  auto same = [&](const Model& m, std::span<const uint64_t> a, std::span<const uint64_t> b,
                  uint64_t c, int64_t e) {
    EvalOptions eo;
    eo.want_bound = false;
    absl::StatusOr<EvalResult> v = sum_ ? EvaluateSum(m, a, c, eo) : EvaluateDot(m, a, b, c, eo);
    if (!v.ok()) return false;
    uint64_t bits = v->bits;
    const FormatSpec& mo = m.OutputFormat();
    if (&mo != &out_format) bits = Convert(mo, out_format, bits, out_rounding_).bits;
    const uint64_t o = out.Bits(e);
    if (bits == o) return true;
    return IsNanBits(out_format, bits) && IsNanBits(out_format, o);
  };
  // One search (rounds A and B) over the elements `pool`: the winner, the elements it was
  // checked on, the ties, and the best preset's count on those elements.
  struct Found {
    Candidate winner;
    std::vector<int64_t> check;
    std::vector<std::string> ties;
    int64_t candidates = 0;
    int64_t base_best = 0;
  };
  const int64_t check_elements =
      std::max<int64_t>(1, options_.fit_check_products / std::max<int64_t>(1, setup_.k));
  auto search = [&](const std::vector<int64_t>& pool) -> absl::StatusOr<Found> {
    // `count` pinned elements of the pool (all of it when count >= its size), in pool order.
    auto pick = [&](int64_t count, uint64_t seed) {
      std::vector<int64_t> idx = PinnedSample(static_cast<int64_t>(pool.size()), count, seed);
      for (int64_t& i : idx) i = pool[static_cast<size_t>(i)];
      return idx;
    };
    // The sample's operands, read once.
    const std::vector<int64_t> sample = pick(std::max(1, options_.fit_sample), 0xF17);
    struct Operands {
      std::vector<uint64_t> a, b;
      uint64_t c = 0;
    };
    std::vector<Operands> sample_ops(sample.size());
    for (size_t i = 0; i < sample.size(); ++i) {
      Read(sample[i], sample_ops[i].a, sample_ops[i].b, sample_ops[i].c);
    }
    const std::vector<int64_t> check = pick(check_elements, 0xC4EC);
    const int64_t checked = static_cast<int64_t>(check.size());

    std::vector<Candidate> all;  // Every candidate tried, in order.
    auto score_sample = [&](size_t from) {
      const int64_t n = static_cast<int64_t>(all.size() - from);
      ParallelForEach(n, threads, [&](int64_t i) {
        Candidate& c = all[from + static_cast<size_t>(i)];
        int64_t hits = 0;
        for (size_t s = 0; s < sample.size(); ++s) {
          hits += same(c.variant.model, sample_ops[s].a, sample_ops[s].b, sample_ops[s].c,
                       sample[s]);
        }
        c.sample = hits;
      });
    };
    // Identical counts of `finalists` on the elements `elems` ((finalist, element block) work
    // items on the threads; per-block counts summed in order).
    auto score = [&](const std::vector<size_t>& finalists, const std::vector<int64_t>& elems)
        -> absl::StatusOr<std::vector<int64_t>> {
      constexpr int64_t kBlock = 64;
      const int64_t n = static_cast<int64_t>(elems.size());
      const int64_t blocks = (n + kBlock - 1) / kBlock;
      std::vector<int64_t> hits(finalists.size() * static_cast<size_t>(blocks), 0);
      ParallelForEach(static_cast<int64_t>(hits.size()), threads, [&](int64_t w) {
        const Candidate& c = all[finalists[static_cast<size_t>(w / blocks)]];
        const int64_t b0 = (w % blocks) * kBlock, b1 = std::min(n, b0 + kBlock);
        std::vector<uint64_t> a, b;
        uint64_t cv = 0;
        int64_t h = 0;
        for (int64_t i = b0; i < b1; ++i) {
          const int64_t e = elems[static_cast<size_t>(i)];
          Read(e, a, b, cv);
          h += same(c.variant.model, a, b, cv, e);
        }
        hits[static_cast<size_t>(w)] = h;
      });
      std::vector<int64_t> counts(finalists.size(), 0);
      for (size_t f = 0; f < finalists.size(); ++f) {
        for (int64_t b = 0; b < blocks; ++b) counts[f] += hits[f * static_cast<size_t>(blocks) + b];
      }
      if (options_.cancelled && options_.cancelled()) return absl::CancelledError("interrupted");
      return counts;
    };
    auto score_check = [&](const std::vector<size_t>& finalists) -> absl::Status {
      absl::StatusOr<std::vector<int64_t>> h = score(finalists, check);
      if (!h.ok()) return h.status();
      for (size_t f = 0; f < finalists.size(); ++f) all[finalists[f]].check = (*h)[f];
      return absl::OkStatus();
    };
    // A second, larger pinned sample (256 elements) that narrows the finalists before the check.
    const std::vector<int64_t> narrow = pick(256, 0x256);
    // One round: candidates [from, end) scored on the sample, the best-scoring (up to 16, plus
    // `keep`, the current winner) checked; returns the index of the round's winner.
    auto round = [&](size_t from, std::optional<size_t> keep) -> absl::StatusOr<size_t> {
      if (options_.progress) {
        options_.progress(0, 1, Cat("fit: ", all.size() - from, " candidates on ", sample.size(),
                                    " sampled elements"));
      }
      score_sample(from);
      int64_t best = -1;
      for (size_t i = from; i < all.size(); ++i) best = std::max(best, all[i].sample);
      if (keep) best = std::max(best, all[*keep].sample);
      std::vector<size_t> finalists;
      for (size_t i = from; i < all.size() && finalists.size() < 32; ++i) {
        if (all[i].sample == best && all[i].check < 0) finalists.push_back(i);
      }
      // Narrowed on 256 elements to the best (at most 8) when the check set is larger.
      if (finalists.size() > 1 && checked > static_cast<int64_t>(narrow.size())) {
        absl::StatusOr<std::vector<int64_t>> h = score(finalists, narrow);
        if (!h.ok()) return h.status();
        const int64_t top = *std::max_element(h->begin(), h->end());
        std::vector<size_t> kept;
        for (size_t f = 0; f < finalists.size() && kept.size() < 8; ++f) {
          if ((*h)[f] == top) kept.push_back(finalists[f]);
        }
        finalists = std::move(kept);
      }
      if (options_.progress) {
        options_.progress(0, 1, Cat("fit: ", finalists.size(), " finalists on ", checked,
                                    " elements"));
      }
      if (absl::Status s = score_check(finalists); !s.ok()) return s;
      if (keep) finalists.insert(finalists.begin(), *keep);
      size_t win = finalists.empty() ? *keep : finalists[0];
      for (size_t f : finalists) {
        if (all[f].check > all[win].check) win = f;
      }
      return win;
    };

    // 2. Round A: the presets as they are, then the split-K families of the bases.
    for (size_t p = 0; p < models_.size(); ++p) {
      Candidate c;
      c.base = models_[p]->name;
      c.variant.model = *models_[p];
      all.push_back(std::move(c));
    }
    for (const std::string& key : key_order) {
      const Model& base = *models_[base_of[key]];
      for (FitVariant& v : SplitKFamily(base, k, has_c)) {
        Candidate c;
        c.base = base.name;
        c.change = v.label;
        c.variant = std::move(v);
        all.push_back(std::move(c));
      }
    }
    absl::StatusOr<size_t> win = round(0, std::nullopt);
    if (!win.ok()) return win.status();
    // 3. Round B around the winner, then its split-K family once more if B changed the datapath.
    {
      const Candidate w = all[*win];
      const size_t from = all.size();
      for (FitVariant& v : DatapathFamily(w.variant.model, has_c)) {
        Candidate c;
        c.base = w.base;
        c.change = w.change.empty() ? v.label : Cat(w.change, "; ", v.label);
        // The file keys: the winner's, then the new ones.
        c.variant = w.variant;
        c.variant.model = v.model;
        for (auto& kv : v.set) c.variant.set.push_back(kv);
        all.push_back(std::move(c));
      }
      absl::StatusOr<size_t> b = round(from, *win);
      if (!b.ok()) return b.status();
      if (*b != *win) {
        win = b;
        const Candidate w2 = all[*win];
        const size_t from2 = all.size();
        for (FitVariant& v : SplitKFamily(w2.variant.model, k, has_c)) {
          Candidate c;
          c.base = w2.base;
          // The datapath keys of w2 (not chain.*) carried over, then the new chain.
          c.variant = v;
          for (const auto& kv : w2.variant.set) {
            if (kv.first.rfind("chain.", 0) != 0) c.variant.set.insert(c.variant.set.begin(), kv);
          }
          std::string dp;
          for (const auto& kv : w2.variant.set) {
            if (kv.first.rfind("chain.", 0) != 0 && !kv.second.empty()) {
              absl::StrAppend(&dp, dp.empty() ? "" : "; ", kv.first, " ", kv.second);
            }
          }
          c.change = dp.empty() ? v.label : Cat(dp, "; ", v.label);
          all.push_back(std::move(c));
        }
        absl::StatusOr<size_t> a2 = round(from2, *win);
        if (!a2.ok()) return a2.status();
        win = a2;
      }
    }
    Found found;
    found.winner = all[*win];
    found.check = check;
    found.candidates = static_cast<int64_t>(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      if (i != *win && all[i].check == found.winner.check) {
        found.ties.push_back(all[i].change.empty() ? all[i].base
                                                   : Cat(all[i].base, ": ", all[i].change));
      }
    }
    // The best preset's own count on the check set.
    for (size_t i = 0; i < all.size(); ++i) {
      if (!all[i].change.empty() || all[i].base != fit.base_best) continue;
      if (all[i].check < 0) {
        if (absl::Status st = score_check({i}); !st.ok()) return st;
      }
      found.base_best = all[i].check;
    }
    return found;
  };
  // The elements of `elems` that `m` reproduces.
  auto reproduced_by = [&](const Model& m, const std::vector<int64_t>& elems) {
    std::vector<char> hit(elems.size(), 0);
    ParallelForEach(static_cast<int64_t>(elems.size()), threads, [&](int64_t i) {
      std::vector<uint64_t> a, b;
      uint64_t cv = 0;
      const int64_t e = elems[static_cast<size_t>(i)];
      Read(e, a, b, cv);
      hit[static_cast<size_t>(i)] = same(m, a, b, cv, e);
    });
    return hit;
  };
  // Where the elements `elems` (flat indices of out) lie: rows and columns of a matmul's output
  // (their ranges), positions of a sum's.
  auto extent = [&](const std::vector<int64_t>& elems) {
    if (elems.empty()) return std::string("none");
    const std::vector<int64_t>& shape = setup_.out_shape;
    if (!sum_ && shape.size() >= 2) {
      const int64_t n = shape.back(), m = shape[shape.size() - 2];
      int64_t i0 = m, i1 = -1, j0 = n, j1 = -1;
      for (int64_t e : elems) {
        const int64_t i = (e / n) % m, j = e % n;
        i0 = std::min(i0, i);
        i1 = std::max(i1, i);
        j0 = std::min(j0, j);
        j1 = std::max(j1, j);
      }
      return Cat("rows ", i0, "..", i1, ", columns ", j0, "..", j1);
    }
    return Cat("positions ", elems.front(), "..", elems.back());
  };

  std::vector<int64_t> everything(static_cast<size_t>(setup_.elements));
  for (int64_t e = 0; e < setup_.elements; ++e) everything[static_cast<size_t>(e)] = e;
  absl::StatusOr<Found> found = search(everything);
  if (!found.ok()) return found.status();
  const Candidate& w = found->winner;
  fit.run = true;
  fit.candidates = found->candidates;
  fit.checked = static_cast<int64_t>(found->check.size());
  fit.base = w.base;
  fit.change = w.change;
  fit.reproduced = w.check;
  fit.ties = found->ties;
  fit.base_reproduced = found->base_best;
  // Per position: the checked elements the fit leaves are fitted again, up to two more groups,
  // while they are at least 16 and a twentieth of the checked ones.
  {
    std::vector<int64_t> rest, here;
    const std::vector<char> hit = reproduced_by(w.variant.model, found->check);
    for (size_t i = 0; i < hit.size(); ++i) (hit[i] ? here : rest).push_back(found->check[i]);
    fit.groups.push_back({w.base, w.change, w.check, fit.checked, extent(here)});
    for (int g = 1; g < 3; ++g) {
      if (static_cast<int64_t>(rest.size()) < std::max<int64_t>(16, fit.checked / 20)) break;
      absl::StatusOr<Found> more = search(rest);
      if (!more.ok()) return more.status();
      fit.candidates += more->candidates;
      const Candidate& wg = more->winner;
      if (wg.check <= 0) break;
      const std::vector<char> hg = reproduced_by(wg.variant.model, rest);
      std::vector<int64_t> left, got;
      for (size_t i = 0; i < hg.size(); ++i) (hg[i] ? got : left).push_back(rest[i]);
      fit.groups.push_back({wg.base, wg.change, static_cast<int64_t>(got.size()),
                            static_cast<int64_t>(rest.size()), extent(got)});
      rest = std::move(left);
    }
    fit.unreproduced = static_cast<int64_t>(rest.size());
  }
  // The model file.
  absl::StatusOr<std::string> base_text = ReadUserFile(Cat(catalog_.dir(), "/", w.base, ".toml"),
                                                       kMaxTextFileBytes, "model file");
  if (!base_text.ok()) return base_text.status();
  fit.model_name = Cat(w.base, "-fit");
  const std::string where = Cat("fit: fpconform audit ", Name(), " on ", out.source, " (K = ", k,
                                "): ",
                                fit.reproduced, " of ", fit.checked, " checked elements",
                                fit.checked == setup_.elements ? "" : " (a pinned sample)",
                                " bit-identical");
  absl::StatusOr<std::string> text = VariantModelText(
      *base_text, w.variant, fit.model_name,
      Cat(w.base, w.change.empty() ? "" : Cat(" with ", w.change), ", fitted to ", out.source),
      where);
  if (!text.ok()) return text.status();
  fit.model_text = Cat("# Fitted by fpconform audit ", Name(), " from the preset ", w.base,
                       w.change.empty() ? " (unchanged)" : Cat(": ", w.change), ".\n# ", where,
                       fit.ties.empty() ? ".\n"
                                        : Cat("; ", fit.ties.size(), " other candidates tie.\n"),
                       *text);
  return absl::OkStatus();
}

}  // namespace fpconform::reports::audit_internal

namespace fpconform::reports {

std::string AuditFitText(const AuditResult& r) {
  const AuditResult::FitResult& f = r.fit;
  if (!f.run) return f.skipped.empty() ? "" : Cat("Fit: not run: ", f.skipped, "\n");
  std::string t = Cat("Fit (beyond the presets): ", f.base,
                      f.change.empty() ? " as it is" : Cat(" with ", f.change), "\n");
  absl::StrAppend(&t, "  reproduces ", f.reproduced, " of ", f.checked, " elements bit for bit",
                  f.checked == static_cast<int64_t>(r.classes.size()) ? ""
                                                                       : " (a pinned sample)",
                  "; the best preset, ", f.base_best, ", ", f.base_reproduced, "\n");
  absl::StrAppend(&t, "  searched ", f.candidates, " models (the presets and the families around ",
                  f.datapaths, " datapaths: split-K slices and their order, then group size, "
                  "fraction bits, where c enters, input conversion, promotion interval)\n");
  if (f.ties.empty()) {
    absl::StrAppend(&t, "  unique: no other finalist reproduces as many\n");
  } else {
    const size_t shown = std::min<size_t>(f.ties.size(), 8);
    absl::StrAppend(&t, "  not unique: ", f.ties.size(), " other candidates reproduce ",
                    f.reproduced, " too: ",
                    absl::StrJoin(f.ties.begin(), f.ties.begin() + static_cast<long>(shown), "; "),
                    f.ties.size() > shown ? "; ..." : "", "\n");
  }
  absl::StrAppend(&t, "  as a model file: --fit-out FILE (name ", f.model_name, ")\n");
  if (f.groups.size() > 1) {
    absl::StrAppend(&t, "  per position (the elements each fit leaves, fitted again):\n");
    for (size_t g = 0; g < f.groups.size(); ++g) {
      const AuditResult::FitResult::Group& grp = f.groups[g];
      absl::StrAppend(&t, "    group ", g, ": ", grp.base,
                      grp.change.empty() ? " as it is" : Cat(" with ", grp.change), ": ",
                      grp.reproduced, " of ", grp.of, " elements, ", grp.where, "\n");
    }
    absl::StrAppend(&t, "    no group reproduces ", f.unreproduced, " elements\n");
  }
  return t;
}

}  // namespace fpconform::reports
