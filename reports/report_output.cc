// Summaries, report.md, shard merging and the file set of a report directory (sweep.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "base/isa.h"
#include "base/str_cat.h"
#include "reports/sweep.h"

namespace fpconform::reports {
namespace {

// Typed cell access by column name (the sweep's own tables; a missing column is a bug).
struct RowView {
  const Table& t;
  const std::vector<Cell>& r;
  // A column the table lacks reads as empty (MergeReports checks shards against the schema,
  // so this only guards against a bug; it must never index out of the row).
  const Cell& At(std::string_view c) const {
    static const Cell kEmpty;
    const int i = t.ColumnIndex(c);
    return i >= 0 && static_cast<size_t>(i) < r.size() ? r[static_cast<size_t>(i)] : kEmpty;
  }
  std::string Str(std::string_view c) const {
    const Cell& x = At(c);
    return std::holds_alternative<std::string>(x) ? std::get<std::string>(x) : "";
  }
  int64_t Int(std::string_view c) const {
    const Cell& x = At(c);
    return std::holds_alternative<int64_t>(x) ? std::get<int64_t>(x) : 0;
  }
  double Num(std::string_view c) const {
    const Cell& x = At(c);
    return std::holds_alternative<double>(x) ? std::get<double>(x) : NAN;
  }
  bool Has(std::string_view c) const { return !std::holds_alternative<std::monostate>(At(c)); }
};

std::string G3(double v) { return std::isnan(v) ? "n/a" : FormatSignificant(v, 3); }

std::string Pct(double v) {
  if (std::isnan(v)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * v);
  return buf;
}

double MaxNan(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return std::max(a, b);
}

// Rows of one table that share a key (GroupRows), in table order.
struct RowGroup {
  std::vector<RowView> rows;

  const RowView& Last() const { return rows.back(); }
  // The rows `keep` accepts.
  template <class Pred>
  RowGroup Where(Pred keep) const {
    RowGroup g;
    for (const RowView& v : rows) {
      if (keep(v)) g.rows.push_back(v);
    }
    return g;
  }
  // The largest (smallest) value of column c, from `start`; std::max (std::min) keeps the value
  // so far over a NaN cell.
  double Max(std::string_view c, double start = 0) const {
    for (const RowView& v : rows) start = std::max(start, v.Num(c));
    return start;
  }
  double Min(std::string_view c, double start = INFINITY) const {
    for (const RowView& v : rows) start = std::min(start, v.Num(c));
    return start;
  }
  // The largest value of column c that is not NaN; NaN when there is none (numpy's nanmax).
  double NanMax(std::string_view c) const {
    double m = NAN;
    for (const RowView& v : rows) m = MaxNan(m, v.Num(c));
    return m;
  }
  // The rubric's assert_close tolerances {rtol, atol} pooled over the group's distributions (the
  // tolerance and the cross-platform summaries): rtol and atol are scale-dependent, so the
  // normal rows' when the sweep has them (the first normal row replaces what other distributions
  // gave), else the largest.
  std::pair<double, double> PooledAssertClose() const {
    double rtol = NAN, atol = NAN;
    bool have_normal = false;
    for (const RowView& v : rows) {
      const bool normal = v.Str("distribution") == "normal";
      if (!normal && have_normal) continue;
      rtol = normal && !have_normal ? v.Num("rec_rtol") : MaxNan(rtol, v.Num("rec_rtol"));
      atol = normal && !have_normal ? v.Num("rec_atol") : MaxNan(atol, v.Num("rec_atol"));
      have_normal = have_normal || normal;
    }
    return {rtol, atol};
  }
};

// `t`'s rows grouped by key_of(RowView), the groups in the order their keys first appear.
template <class KeyOf>
auto GroupRows(const Table& t, KeyOf key_of) {
  using Key = decltype(key_of(std::declval<const RowView&>()));
  std::vector<std::pair<Key, RowGroup>> groups;
  std::map<Key, size_t> index;
  for (const auto& row : t.rows) {
    const RowView v{t, row};
    const auto [it, fresh] = index.try_emplace(key_of(v), groups.size());
    if (fresh) groups.emplace_back(it->first, RowGroup{});
    groups[it->second].second.rows.push_back(v);
  }
  return groups;
}

// Appends G3 of the group's Max of each of `columns` (from 0) to `cells`.
void AppendMaxima(std::vector<std::string>& cells, const RowGroup& g,
                  std::initializer_list<std::string_view> columns) {
  for (std::string_view c : columns) cells.push_back(G3(g.Max(c)));
}

constexpr auto I = IntColumn;
constexpr auto S = StringColumn;
constexpr auto F = FloatColumn;

void MdTable(std::string& out, const std::vector<std::string>& header,
             const std::vector<std::vector<std::string>>& rows) {
  out += "| " + Join(header, " | ") + " |\n|";
  for (size_t i = 0; i < header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& r : rows) out += "| " + Join(r, " | ") + " |\n";
  out += "\n";
}

}  // namespace

void AddSummaries(Report& report) {
  report.tables.erase(std::remove_if(report.tables.begin(), report.tables.end(),
                                     [](const Table& t) {
                                       return t.name == "rubric" || t.name == "defaults";
                                     }),
                      report.tables.end());
  const Table* tol = report.Find("tolerance");
  const Table* power = report.Find("power");
  if (tol == nullptr) return;

  // Power per (op, dtype, platform, k): weakest mutation under the recommended assert_close
  // tolerance; and per (op, dtype, platform): the first K at which each default passes a bug.
  struct Weak {
    double rejected = INFINITY;
    std::string mutation;
  };
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, Weak> weakest;
  struct FirstPass {
    int64_t k = -1;
    std::string mutation;
  };
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<FirstPass, FirstPass>> passes;
  if (power != nullptr) {
    for (const auto& row : power->rows) {
      const RowView v{*power, row};
      if (!v.Has("rejected_assert_close")) continue;
      const auto key = std::make_tuple(v.Str("op"), v.Str("dtype"), v.Str("platform"), v.Int("k"));
      Weak& w = weakest[key];
      const double rej = v.Num("rejected_assert_close");
      if (rej < w.rejected) w = {rej, Cat(v.Str("mutation"), " (", v.Str("distribution"), ")")};
      auto& fp = passes[std::make_tuple(v.Str("op"), v.Str("dtype"), v.Str("platform"))];
      const int64_t k = v.Int("k");
      if (v.Num("rejected_torch") < 0.5 && (fp.first.k < 0 || k < fp.first.k)) {
        fp.first = {k, v.Str("mutation")};
      }
      if (v.Num("rejected_jax") < 0.5 && (fp.second.k < 0 || k < fp.second.k)) {
        fp.second = {k, v.Str("mutation")};
      }
    }
  }

  Table rubric;
  rubric.name = "rubric";
  rubric.title = "Rubric table (worst case over distributions)";
  rubric.description =
      "Per (op, dtype, platform, K): the ULP and bound-normalized recommendations are the "
      "largest over the input distributions, so they hold for all of them (both units are "
      "independent of the data's scale). rtol/atol are those of N(0,1) inputs (the `normal` "
      "distribution; other distributions are in report.csv): atol is absolute, so for inputs of "
      "scale s_a, s_b multiply it by s_a * s_b. The last columns name the mutation that the "
      "rtol/atol tolerance catches least often, over all distributions.";
  rubric.columns = {S("op", "matmul or sum"), S("dtype", "input dtype"),
                    S("platform", "accumulation model"), I("k", "reduction length"),
                    I("distributions", "distributions combined"),
                    F("bn_max", "u*sum|ab|", "max observed bound-normalized error"),
                    F("bound_bn", "u*sum|ab|", "worst-case bound"),
                    F("rec_rtol", "", "recommended rtol (normal inputs)"),
                    F("rec_atol", "", "recommended atol (normal inputs)"),
                    F("rec_ulp", "ulp", "recommended ULP tolerance"),
                    F("rec_bn", "u*sum|ab|", "recommended bound-normalized tolerance"),
                    S("weakest_mutation", "mutation (distribution) least often rejected"),
                    F("weakest_rejected", "", "its rejected fraction under rec_rtol/rec_atol")};
  const auto by_k = GroupRows(*tol, [](const RowView& v) {
    return std::make_tuple(v.Str("op"), v.Str("dtype"), v.Str("platform"), v.Int("k"));
  });
  for (const auto& [key, g] : by_k) {
    const auto [rtol, atol] = g.PooledAssertClose();
    const auto w = weakest.find(key);
    const bool weak = w != weakest.end();
    rubric.rows.push_back(RowBuilder(rubric)
                              .Set("op", std::get<0>(key))
                              .Set("dtype", std::get<1>(key))
                              .Set("platform", std::get<2>(key))
                              .Set("k", std::get<3>(key))
                              .Set("distributions", static_cast<int64_t>(g.rows.size()))
                              .Set("bn_max", g.NanMax("bn_max"))
                              .Set("bound_bn", g.NanMax("bound_bn"))
                              .Set("rec_rtol", rtol)
                              .Set("rec_atol", atol)
                              .Set("rec_ulp", g.NanMax("rec_ulp"))
                              .Set("rec_bn", g.NanMax("rec_bn"))
                              .Set("weakest_mutation", weak ? Cell{w->second.mutation} : Cell{})
                              .Set("weakest_rejected", weak ? Cell{w->second.rejected} : Cell{})
                              .Build());
  }

  Table defaults;
  defaults.name = "defaults";
  defaults.title = "Torch and JAX default tolerances against this evidence";
  defaults.description =
      "The smallest K of the sweep at which the framework's default tolerance (for the output "
      "dtype) rejects at least one correct output of the platform (any distribution), and the "
      "smallest K at which it passes a mutation's outputs more often than not (the first such "
      "mutation is named). Empty: not within the swept K.";
  defaults.columns = {S("op", "matmul or sum"), S("dtype", "input dtype"),
                      S("platform", "accumulation model"), F("torch_rtol", "", "torch default rtol"),
                      F("torch_atol", "", "torch default atol"),
                      I("torch_fails_correct_from_k", "first K with a false rejection"),
                      I("torch_passes_bug_from_k", "first K passing a mutation"),
                      S("torch_passed_mutation", "that mutation"),
                      F("jax_tol", "", "JAX default tolerance"),
                      I("jax_fails_correct_from_k", "first K with a false rejection"),
                      I("jax_passes_bug_from_k", "first K passing a mutation"),
                      S("jax_passed_mutation", "that mutation")};
  const auto by_platform = GroupRows(*tol, [](const RowView& v) {
    return std::make_tuple(v.Str("op"), v.Str("dtype"), v.Str("platform"));
  });
  for (const auto& [key, g] : by_platform) {
    // The smallest K at which `rejects` (a share of correct outputs) is above 0; -1: none.
    // (`rows`, not the binding g: clang before 16 cannot capture a structured binding.)
    const std::vector<RowView>& rows = g.rows;
    auto first_failing_k = [&rows](std::string_view rejects) {
      int64_t first = -1;
      for (const RowView& v : rows) {
        const int64_t k = v.Int("k");
        if (v.Num(rejects) > 0 && (first < 0 || k < first)) first = k;
      }
      return first;
    };
    const auto p = passes.find(key);
    const FirstPass tp = p == passes.end() ? FirstPass{} : p->second.first;
    const FirstPass jp = p == passes.end() ? FirstPass{} : p->second.second;
    auto k_or_empty = [](int64_t k) { return k < 0 ? Cell{} : Cell{k}; };
    defaults.rows.push_back(
        RowBuilder(defaults)
            .Set("op", std::get<0>(key))
            .Set("dtype", std::get<1>(key))
            .Set("platform", std::get<2>(key))
            .Set("torch_rtol", g.Last().Num("torch_rtol"))
            .Set("torch_atol", g.Last().Num("torch_atol"))
            .Set("torch_fails_correct_from_k", k_or_empty(first_failing_k("torch_rejects")))
            .Set("torch_passes_bug_from_k", k_or_empty(tp.k))
            .Set("torch_passed_mutation", tp.k < 0 ? Cell{} : Cell{tp.mutation})
            .Set("jax_tol", g.Last().Num("jax_tol"))
            .Set("jax_fails_correct_from_k", k_or_empty(first_failing_k("jax_rejects")))
            .Set("jax_passes_bug_from_k", k_or_empty(jp.k))
            .Set("jax_passed_mutation", jp.k < 0 ? Cell{} : Cell{jp.mutation})
            .Build());
  }
  report.tables.push_back(std::move(rubric));
  report.tables.push_back(std::move(defaults));
}

namespace {

// The composite kernels' tables, summarized per (function, model): the largest recommendation
// over distributions and row lengths, the weakest power per mutation, the cross pairs' largest
// recommendation (every row is in composite.csv, composite_power.csv, composite_cross.csv).
void CompositeSection(const Report& report, std::string& out) {
  const Table* c = report.Find("composite");
  if (c == nullptr || c->rows.empty()) return;
  out += "## " + c->title + "\n\n" + c->description + "\n\n";
  std::vector<std::vector<std::string>> rows;
  const auto by_model = GroupRows(*c, [](const RowView& v) {
    return std::make_pair(v.Str("function"), v.Str("platform"));
  });
  for (const auto& [key, g] : by_model) {
    rows.push_back({key.first, key.second, g.Last().Str("exact_model")});
    AppendMaxima(rows.back(), g, {"ulp_max", "bound_ulp", "rec_ulp", "rec_rtol", "rec_atol"});
  }
  MdTable(out, {"function", "model", "bit-exact model", "max ULP (model)", "bound (ULP)", "max ULP (rec.)",
                "rtol", "atol"},
          rows);
  if (const Table* p = report.Find("composite_power"); p != nullptr && !p->rows.empty()) {
    out += "\n" + p->description + " The weakest over distributions and row lengths:\n\n";
    std::map<std::tuple<std::string, std::string, std::string>, double> least;
    std::vector<std::tuple<std::string, std::string, std::string>> keys;
    for (const auto& row : p->rows) {
      const RowView v{*p, row};
      const auto key = std::make_tuple(v.Str("function"), v.Str("platform"), v.Str("mutation"));
      auto [it, fresh] = least.try_emplace(key, v.Num("rejected"));
      if (fresh) keys.push_back(key);
      it->second = std::min(it->second, v.Num("rejected"));
    }
    rows.clear();
    for (const auto& key : keys) {
      rows.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), G3(least[key])});
    }
    MdTable(out, {"function", "model", "mutation", "rejected (worst case)"}, rows);
  }
  if (const Table* x = report.Find("composite_cross"); x != nullptr && !x->rows.empty()) {
    out += "\n" + x->description + "\n\n";
    rows.clear();
    for (const auto& row : x->rows) {
      const RowView v{*x, row};
      rows.push_back({v.Str("function"), v.Str("platform_a"), v.Str("platform_b"), v.Str("distribution"),
                      std::to_string(v.Int("n")), G3(v.Num("diff_ulp_max")), G3(v.Num("allowed_ulp_max")),
                      G3(v.Num("rec_rtol")), G3(v.Num("rec_atol"))});
    }
    MdTable(out, {"function", "reference", "port", "distribution", "n", "max diff (ULP)", "allowed (ULP)", "rtol",
                  "atol"},
            rows);
  }
  out += "\nEvery row: composite.csv, composite_power.csv, composite_cross.csv.\n\n";
}

// Attention's tables, summarized: per (model, distribution, S) the largest recommendation and
// false-alarm share over head dimensions and masks (with the smallest median ESS); per (model,
// mutation, distribution) the largest share each criterion accepts, one value per S; per (pair, distribution, S) the cross
// pairs' largest distance and recommendation (every row is in attention.csv,
// attention_power.csv, attention_cross.csv).
void AttentionSection(const Report& report, std::string& out) {
  const Table* a = report.Find("attention");
  if (a == nullptr || a->rows.empty()) return;
  out += "## " + a->title + "\n\n" + a->description + "\n\n";
  out += "Criteria: rec = the row's recommendation against the exact value (covers every output the model "
         "admits); prob. = the probabilistic one (covers the model's typical error, lambda standard deviations, "
         "sweep.h); nki = nki-library's "
         "attention test (maxAllClose, rtol 2e-2, atol 1e-5, |b| = max over the case); allclose = "
         "np.allclose with the same numbers; fa = FlashAttention's test (max error <= 2 x that of a "
         "same-dtype PyTorch reference + 1e-5). Per (model, distribution, S), the worst over head "
         "dimensions and masks:\n\n";
  std::vector<std::vector<std::string>> rows;
  const auto by_length = GroupRows(*a, [](const RowView& v) {
    return std::make_tuple(v.Str("platform"), v.Str("distribution"), v.Int("s"));
  });
  for (const auto& [key, g] : by_length) {
    rows.push_back({std::get<0>(key), g.Last().Str("dtype"), std::get<1>(key), std::to_string(std::get<2>(key)),
                    G3(g.Min("ess_median"))});
    AppendMaxima(rows.back(), g,
                 {"ulp_max", "bound_ulp", "rec_ulp", "rec_rtol", "rec_atol", "prob_rtol", "prob_atol", "nki_rejects",
                  "allclose_rejects", "fa_rejects"});
  }
  MdTable(out, {"model", "dtype", "distribution", "S", "ESS (median)", "max ULP (model)", "bound (ULP)",
                "max ULP (rec.)", "rtol", "atol", "prob. rtol", "prob. atol", "nki rejects", "allclose rejects",
                "fa rejects"},
          rows);
  if (const Table* p = report.Find("attention_power"); p != nullptr && !p->rows.empty()) {
    std::set<int64_t> lengths;
    for (const auto& row : p->rows) lengths.insert(RowView{*p, row}.Int("s"));
    std::vector<std::string> s_list;
    for (int64_t n : lengths) s_list.push_back(std::to_string(n));
    out += "\n" + p->description + " Per S = " + Join(s_list, " / ") +
           ", the largest share over head dimensions and masks (n/a: no case changed):\n\n";
    rows.clear();
    const auto by_mutation = GroupRows(*p, [](const RowView& v) {
      return std::make_tuple(v.Str("platform"), v.Str("mutation"), v.Str("distribution"));
    });
    for (const auto& [key, g] : by_mutation) {
      std::vector<std::string> row = {std::get<0>(key), std::get<1>(key), std::get<2>(key)};
      for (const char* column : {"rec_accepts", "prob_accepts", "nki_accepts", "allclose_accepts", "fa_accepts"}) {
        std::vector<std::string> cells;
        for (int64_t n : lengths) {
          // -1: no row of this S, or none where a case changed (rec_accepts empty).
          const double x =
              g.Where([n](const RowView& v) { return v.Int("s") == n && v.Has("rec_accepts"); }).Max(column, -1);
          cells.push_back(x < 0 ? std::string("n/a") : G3(x));
        }
        row.push_back(Join(cells, " / "));
      }
      rows.push_back(std::move(row));
    }
    MdTable(out, {"model", "mutation", "distribution", "rec accepts", "prob. accepts", "nki accepts", "allclose accepts",
                  "fa accepts"},
            rows);
  }
  if (const Table* x = report.Find("attention_cross"); x != nullptr && !x->rows.empty()) {
    out += "\n" + x->description + " Per pair, distribution and S, the largest over head dimensions and "
           "masks:\n\n";
    rows.clear();
    const auto by_pair = GroupRows(*x, [](const RowView& v) {
      return std::make_tuple(v.Str("platform_a"), v.Str("platform_b"), v.Str("distribution"), v.Int("s"));
    });
    for (const auto& [key, g] : by_pair) {
      rows.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::to_string(std::get<3>(key))});
      AppendMaxima(rows.back(), g,
                   {"diff_abs_max", "diff_ulp_max", "allowed_ulp_max", "rec_rtol", "rec_atol", "prob_rtol",
                    "prob_atol"});
    }
    MdTable(out, {"reference", "port", "distribution", "S", "max diff", "max diff (ULP)", "allowed (ULP)", "rtol",
                  "atol", "prob. rtol", "prob. atol"},
            rows);
  }
  out += "\nEvery row: attention.csv, attention_power.csv, attention_cross.csv.\n\n";
}

}  // namespace

std::string ToMarkdown(const Report& report) {
  std::string out = "# fpconform tolerance report\n\n";
  out += "The recommended tolerances come first (one table per op), then the cross-platform "
         "table, the power of each tolerance against known-wrong results and the default "
         "tolerances of torch and JAX; provenance (everything needed to reproduce the report) "
         "is at the end.\n\n";
  const Table* rubric = report.Find("rubric");
  const Table* tol = report.Find("tolerance");
  if (tol != nullptr) {
    out += "## How to read this\n\n" + tol->description + "\n\n";
    out += "Units: `ulp` = units in the last place of the output format at the exact value; "
           "`u*sum|ab|` = the unit roundoff of the accumulation format times sum |a_i b_i| (the "
           "bound-normalized unit, right under cancellation). A PyTorch-style check is "
           "`|actual - expected| <= atol + rtol * |expected|` with the exact (or float64) result "
           "as `expected`.\n\n";
  }
  if (rubric != nullptr && !rubric->rows.empty()) {
    std::vector<std::string> ops;
    for (const auto& row : rubric->rows) {
      const std::string op = RowView{*rubric, row}.Str("op");
      if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
    }
    for (const std::string& op : ops) {
      out += "## " + op + ": recommended tolerances\n\n" + rubric->description + "\n\n";
      std::vector<std::vector<std::string>> rows;
      for (const auto& row : rubric->rows) {
        const RowView v{*rubric, row};
        if (v.Str("op") != op) continue;
        rows.push_back({v.Str("dtype"), v.Str("platform"), std::to_string(v.Int("k")),
                        G3(v.Num("bn_max")), G3(v.Num("bound_bn")), G3(v.Num("rec_rtol")),
                        G3(v.Num("rec_atol")), G3(v.Num("rec_ulp")), G3(v.Num("rec_bn")),
                        v.Has("weakest_mutation")
                            ? v.Str("weakest_mutation") + " " + Pct(v.Num("weakest_rejected"))
                            : "n/a"});
      }
      MdTable(out,
              {"dtype", "platform", "K", "max observed (u*sum\\|ab\\|)", "worst-case bound",
               "rtol", "atol", "max ULP", "bound-normalized", "weakest catch"},
              rows);
    }
  }
  if (const Table* cross = report.Find("cross_platform"); cross != nullptr && !cross->rows.empty()) {
    out += "## Cross-platform tolerances\n\n" + cross->description +
           " Below: the ULP, bound-normalized and relative columns are the worst over the input "
           "distributions; rtol/atol are those of N(0,1) inputs (atol is absolute: scale it with "
           "the data; every distribution is in cross_platform.csv).\n\n";
    std::vector<std::vector<std::string>> rows;
    const auto by_pair = GroupRows(*cross, [](const RowView& v) {
      return std::make_tuple(v.Str("name"), v.Str("op"), v.Int("k"));
    });
    for (const auto& [key, g] : by_pair) {
      // rtol/atol (absolute: scale-dependent) as in the rubric; the scale-free columns are the
      // worst over all distributions.
      const auto [rtol, atol] = g.PooledAssertClose();
      rows.push_back({std::get<0>(key), std::to_string(std::get<2>(key)), G3(g.NanMax("diff_ulp_max")),
                      G3(g.NanMax("diff_bn_max")), G3(g.NanMax("diff_rel_max")), G3(g.NanMax("worst_bn")),
                      G3(rtol), G3(atol)});
    }
    MdTable(out,
            {"pair", "K (quantize: elements)", "max ULP distance", "max diff (u*sum\\|ab\\|)",
             "max relative diff", "worst case (u*sum\\|ab\\|)", "rtol", "atol"},
            rows);
  }
  if (const Table* power = report.Find("power"); power != nullptr && !power->rows.empty()) {
    out += "## Tolerance power\n\n" + power->description +
           " Below: the recommended assert_close tolerance, lowest rejected fraction over the "
           "distributions; **PASSES** marks a tolerance that lets that bug through more often "
           "than not.\n\n";
    std::vector<int64_t> ks;
    std::vector<std::tuple<std::string, std::string, std::string, std::string>> order;
    std::map<std::tuple<std::string, std::string, std::string, std::string>,
             std::map<int64_t, double>>
        cells;
    for (const auto& row : power->rows) {
      const RowView v{*power, row};
      if (!v.Has("rejected_assert_close")) continue;
      const int64_t k = v.Int("k");
      if (std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
      const auto key = std::make_tuple(v.Str("op"), v.Str("dtype"), v.Str("platform"), v.Str("mutation"));
      if (cells.count(key) == 0) order.push_back(key);
      auto [it, fresh] = cells[key].emplace(k, v.Num("rejected_assert_close"));
      if (!fresh) it->second = std::min(it->second, v.Num("rejected_assert_close"));
    }
    std::sort(ks.begin(), ks.end());
    std::vector<std::string> header = {"op", "dtype", "platform", "mutation"};
    for (int64_t k : ks) header.push_back("K=" + std::to_string(k));
    std::vector<std::vector<std::string>> rows;
    for (const auto& key : order) {
      std::vector<std::string> r = {std::get<0>(key), std::get<1>(key), std::get<2>(key),
                                    std::get<3>(key)};
      for (int64_t k : ks) {
        const auto it = cells[key].find(k);
        if (it == cells[key].end()) {
          r.push_back("");
        } else {
          r.push_back(it->second < 0.5 ? "**PASSES** " + Pct(it->second) : Pct(it->second));
        }
      }
      rows.push_back(std::move(r));
    }
    MdTable(out, header, rows);
  }
  if (const Table* d = report.Find("defaults"); d != nullptr && !d->rows.empty()) {
    out += "## " + d->title + "\n\n" + d->description + "\n\n";
    std::vector<std::vector<std::string>> rows;
    auto k = [](const RowView& v, std::string_view c) {
      return v.Has(c) ? std::to_string(v.Int(c)) : std::string("-");
    };
    for (const auto& row : d->rows) {
      const RowView v{*d, row};
      rows.push_back({v.Str("op"), v.Str("dtype"), v.Str("platform"),
                      G3(v.Num("torch_rtol")) + " / " + G3(v.Num("torch_atol")),
                      k(v, "torch_fails_correct_from_k"),
                      k(v, "torch_passes_bug_from_k") +
                          (v.Has("torch_passed_mutation") ? " (" + v.Str("torch_passed_mutation") + ")" : ""),
                      G3(v.Num("jax_tol")), k(v, "jax_fails_correct_from_k"),
                      k(v, "jax_passes_bug_from_k") +
                          (v.Has("jax_passed_mutation") ? " (" + v.Str("jax_passed_mutation") + ")" : "")});
    }
    MdTable(out,
            {"op", "dtype", "platform", "torch rtol / atol", "torch fails correct from K",
             "torch passes a bug from K", "JAX tol", "JAX fails correct from K",
             "JAX passes a bug from K"},
            rows);
  }
  if (const Table* q = report.Find("quantize"); q != nullptr && !q->rows.empty()) {
    out += "## " + q->title + "\n\n" + q->description + "\n\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& row : q->rows) {
      const RowView v{*q, row};
      rows.push_back({v.Str("format"), v.Str("distribution"), G3(v.Num("ulp_max")),
                      G3(v.Num("rel_max")), G3(v.Num("saturated")), G3(v.Num("rec_rtol")),
                      G3(v.Num("rec_atol")), G3(v.Num("rec_ulp"))});
    }
    MdTable(out, {"format", "distribution", "max ULP", "max relative", "saturated", "rtol", "atol",
                  "max ULP (rec.)"},
            rows);
  }
  CompositeSection(report, out);
  AttentionSection(report, out);
  out += "Full data: report.csv (tolerance rows), cross_platform.csv, power.csv, quantize.csv, "
         "rubric.csv, defaults.csv, report.json (all tables; schema in README.md).\n\n";
  out += "## Provenance\n\nEverything needed to reproduce this report:\n\n";
  {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [k, v] : report.provenance) rows.push_back({k, "`" + v + "`"});
    MdTable(out, {"key", "value"}, rows);
  }
  // Not a provenance entry: report.json and the CSV files are the same bytes on every level.
  out += Cat("\nThis file was written on instruction set `", IsaName(ActiveIsa()),
             "` (FPCONFORM_ISA); the CSV and JSON files are the same bytes on every level.\n");
  return out;
}

namespace {

// A shard's tables against the sweep's own: every row table present once, with the same
// columns (name and type, in order), and no other tables but the recomputed summaries. The
// summaries and the merge read cells by column name, so this is what keeps them in bounds.
absl::Status CheckAgainstSchema(const Report& shard, const std::vector<Table>& schema,
                                const std::string& name) {
  for (const Table& t : shard.tables) {
    if (t.name == "rubric" || t.name == "defaults") continue;
    const bool known = std::any_of(schema.begin(), schema.end(),
                                   [&](const Table& w) { return w.name == t.name; });
    if (!known) {
      return absl::InvalidArgumentError(
          Cat(name, ": table '", t.name, "' is not a table the tolerance sweep writes"));
    }
    const auto copies = std::count_if(shard.tables.begin(), shard.tables.end(),
                                      [&](const Table& x) { return x.name == t.name; });
    if (copies > 1) {
      return absl::InvalidArgumentError(Cat(name, ": table '", t.name, "' appears ", copies,
                                            " times"));
    }
  }
  for (const Table& want : schema) {
    const Table* t = shard.Find(want.name);
    if (t == nullptr) {
      return absl::InvalidArgumentError(Cat(name, ": table '", want.name, "' missing"));
    }
    for (size_t c = 0; c < want.columns.size(); ++c) {
      const Column& w = want.columns[c];
      const int at = t->ColumnIndex(w.name);
      if (at < 0) {
        return absl::InvalidArgumentError(
            Cat(name, ": table '", want.name, "': column '", w.name, "' missing"));
      }
      const Column& got = t->columns[static_cast<size_t>(at)];
      if (got.type != w.type) {
        return absl::InvalidArgumentError(
            Cat(name, ": table '", want.name, "': column '", w.name, "' is a ",
                ColumnTypeName(got.type), " column, the sweep writes ", ColumnTypeName(w.type)));
      }
      if (static_cast<size_t>(at) != c) {
        return absl::InvalidArgumentError(
            Cat(name, ": table '", want.name, "': column '", w.name, "' is column ", at + 1,
                ", the sweep writes it as column ", c + 1));
      }
    }
    if (t->columns.size() != want.columns.size()) {
      return absl::InvalidArgumentError(
          Cat(name, ": table '", want.name, "': column '",
              t->columns[want.columns.size()].name, "' is not a column the sweep writes"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Report> MergeReports(const std::vector<Report>& shards,
                                    const std::vector<std::string>& names) {
  if (shards.empty()) return absl::InvalidArgumentError("merge: no reports given");
  auto without_shard = [](const Report& r) {
    std::vector<std::pair<std::string, std::string>> p;
    for (const auto& kv : r.provenance) {
      if (kv.first != "shard") p.push_back(kv);
    }
    return p;
  };
  const auto base = without_shard(shards[0]);
  int count = -1;
  std::set<int> seen;
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string shard = shards[i].Provenance("shard");
    int a = 0, b = 0;
    if (shard.empty() || std::sscanf(shard.c_str(), "%d/%d", &a, &b) != 2 || a < 1 || a > b) {
      return absl::InvalidArgumentError(
          Cat(names[i], ": not a shard report (no 'shard i/n' in its provenance)"));
    }
    if (count >= 0 && b != count) {
      return absl::InvalidArgumentError(
          Cat(names[i], ": shard ", shard, " belongs to a split into ", b,
                       " shards, the others to ", count));
    }
    count = b;
    if (!seen.insert(a).second) {
      return absl::InvalidArgumentError(Cat(names[i], ": shard ", shard, " given twice"));
    }
    if (without_shard(shards[i]) != base) {
      return absl::InvalidArgumentError(
          Cat(names[i], ": provenance differs from ", names[0],
                       " (another sweep file, seed, version or model set)"));
    }
  }
  for (int s = 1; s <= count; ++s) {
    if (seen.count(s) == 0) {
      return absl::InvalidArgumentError(Cat("merge: shard ", s, "/", count, " missing"));
    }
  }
  const std::vector<Table> schema = SweepTableSchemas();
  for (size_t i = 0; i < shards.size(); ++i) {
    if (absl::Status s = CheckAgainstSchema(shards[i], schema, names[i]); !s.ok()) return s;
  }
  Report merged;
  merged.provenance = base;
  for (const Table& want : schema) {
    const Table& t = *shards[0].Find(want.name);
    Table m = t;
    m.rows.clear();
    for (size_t i = 0; i < shards.size(); ++i) {
      const Table* st = shards[i].Find(t.name);
      m.rows.insert(m.rows.end(), st->rows.begin(), st->rows.end());
    }
    const int ui = m.ColumnIndex("unit"), ii = m.ColumnIndex("item");
    if (ui < 0 || ii < 0) {
      return absl::InvalidArgumentError(Cat("table '", t.name, "' has no unit/item"));
    }
    auto key = [&](const std::vector<Cell>& r) {
      const Cell& u = r[static_cast<size_t>(ui)];
      const Cell& it = r[static_cast<size_t>(ii)];
      return std::make_pair(std::holds_alternative<int64_t>(u) ? std::get<int64_t>(u) : -1,
                            std::holds_alternative<int64_t>(it) ? std::get<int64_t>(it) : -1);
    };
    std::stable_sort(m.rows.begin(), m.rows.end(),
                     [&](const auto& x, const auto& y) { return key(x) < key(y); });
    for (size_t r = 1; r < m.rows.size(); ++r) {
      if (key(m.rows[r]) == key(m.rows[r - 1])) {
        return absl::InvalidArgumentError(Cat(
            "merge: table '", t.name, "' row (unit ", key(m.rows[r]).first, ", item ",
            key(m.rows[r]).second, ") appears in two shards"));
      }
    }
    merged.tables.push_back(std::move(m));
  }
  AddSummaries(merged);
  return merged;
}

std::vector<std::pair<std::string, std::string>> ReportFiles(const Report& report) {
  std::vector<std::pair<std::string, std::string>> files;
  files.emplace_back("report.json", ToJson(report));
  files.emplace_back("report.md", ToMarkdown(report));
  for (const Table& t : report.tables) {
    files.emplace_back(t.name == "tolerance" ? std::string("report.csv") : t.name + ".csv",
                       ToCsv(t));
  }
  return files;
}

}  // namespace fpconform::reports
