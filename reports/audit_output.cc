// The file and terminal forms of audits (audit.h; the JSON schema is reports/AUDIT.md).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/str_cat.h"
#include "formats/format_spec.h"
#include "formats/text.h"
#include "nlohmann/json.hpp"
#include "reports/audit.h"
#include "reports/report.h"

namespace fpconform::reports {
namespace {

using ojson = nlohmann::ordered_json;

std::string G(double v, int digits = 6) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

// A percentage that never prints 0 for a non-zero count (one in 10^8 is 1e-06%).
std::string Percent(int64_t part, int64_t whole) {
  if (whole <= 0) return "0%";
  const double p = 100.0 * static_cast<double>(part) / static_cast<double>(whole);
  if (part == 0) return "0.0%";
  if (part == whole) return "100.0%";
  char buf[48];
  if (p >= 0.1 && p <= 99.9) {
    std::snprintf(buf, sizeof buf, "%.1f%%", p);
  } else if (p < 0.1) {
    std::snprintf(buf, sizeof buf, "%.3g%%", p);
  } else {
    // Near 100: enough decimals that the shortfall shows (99.98%, 99.999999%), never "100%".
    const double rest = 100.0 * static_cast<double>(whole - part) / static_cast<double>(whole);
    const int decimals = std::max(1, static_cast<int>(std::ceil(-std::log10(rest))));
    std::snprintf(buf, sizeof buf, "%.*f%%", decimals, std::floor(p * std::pow(10.0, decimals)) /
                                                           std::pow(10.0, decimals));
  }
  return buf;
}

std::string Index(const std::vector<int64_t>& index) {
  std::string s = "(";
  for (size_t i = 0; i < index.size(); ++i) s += Cat(i ? ", " : "", index[i]);
  return s + ")";
}

std::string Shape(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += Cat(i ? ", " : "", shape[i]);
  return s + "]";
}

ojson Num(double v) {
  if (std::isfinite(v)) return v;
  return FormatDouble(v);
}

std::string Hex(const AuditResult& r, uint64_t bits) {
  const FormatSpec* f = FindFormat(r.out_format);
  return f != nullptr ? HexBits(*f, bits) : Cat(bits);
}

// Class c's key in the text and the JSON: AuditClassName's word.
const char* ClassKey(int c) { return AuditClassName(static_cast<AuditClass>(c)); }

std::string Headline(const AuditResult& r) {
  std::string s = Cat("fpconform audit ", r.op, ": ", r.verdict == AuditVerdict::kPass ? "PASS" : "FAIL");
  if (!r.platforms.empty()) s += Cat(" against ", r.platforms[0].name);
  if (r.op == "matmul" || r.op == "sum") s += Cat(" (K = ", r.k, ")");
  s += Cat(", output ", r.out_format, " ", Shape(r.out_shape));
  return s;
}

std::string BestMatchSentence(const AuditResult& r) {
  if (r.platforms.size() < 2) return "";
  int64_t total = 0;
  for (int64_t c : r.platforms[0].counts) total += c;
  std::string s = "this output is bit-identical to ";
  bool first = true;
  // Best match first, then the others in the order given.
  std::vector<const PlatformAudit*> order;
  for (const PlatformAudit& p : r.platforms) {
    if (p.name == r.best_platform) order.insert(order.begin(), &p);
    else order.push_back(&p);
  }
  for (const PlatformAudit* p : order) {
    s += Cat(first ? "" : "; to ", p->name, " on ", Percent(p->counts[0], total),
             first ? " of elements" : "");
    first = false;
  }
  return s;
}

// The aggregate gate's line (AuditResult::Aggregate; "" when it did not run).
std::string AggregateSentence(const AuditResult& r) {
  const AuditResult::Aggregate& g = r.aggregate;
  if (!g.run) return "";
  std::string s = Cat("Aggregate against ", g.platform, " over ", g.elements, " finite elements",
                      g.excluded > 0 ? Cat(" (", g.excluded, " non-finite left out)") : "", ": ",
                      g.pass ? "pass" : "FAIL", "; relative L2 error ", G(g.rel_l2, 4), " (limit ",
                      G(g.rel_l2_limit, 4), " = ||B||_2 / ||exact||_2; the emulation's own ",
                      G(g.emulated_rel_l2, 4), "), correlation ", G(g.correlation, 8), " (limit ",
                      g.correlation_limit > 0 ? G(g.correlation_limit, 8) : std::string("none"),
                      "; the emulation's own ", G(g.emulated_correlation, 8), ")");
  if (g.unbounded > 0) s += Cat("; no limit: ", g.unbounded, " element(s) have no bound");
  if (!g.pass) s += Cat(": ", g.why);
  return s;
}

}  // namespace

std::string AuditSummaryText(const AuditResult& r) {
  std::string s = Headline(r) + "\n";
  int64_t total = 0;
  for (int64_t c : r.counts) total += c;
  if (r.verdict != AuditVerdict::kPass) {
    s += "Tensor-likes are not close!\n\n";
  } else {
    s += "\n";
  }
  s += Cat("Mismatched elements: ", r.mismatched, " / ", total, " (", Percent(r.mismatched, total), ")\n");
  if (!r.max_abs_index.empty()) {
    s += Cat("Greatest absolute difference: ", G(r.max_abs_diff), " at index ", Index(r.max_abs_index),
             " (up to ", G(r.max_abs_allowed), " allowed)\n");
    s += Cat("Greatest relative difference: ", G(r.max_rel_diff), " at index ", Index(r.max_rel_index),
             " (up to ", G(r.max_rel_allowed), " allowed)\n");
  }
  s += "\nClasses";
  if (!r.platforms.empty()) s += Cat(" against ", r.platforms[0].name);
  s += ":";
  for (int c = 0; c < kAuditClasses; ++c) s += Cat(" ", ClassKey(c), " ", r.counts[static_cast<size_t>(c)]);
  s += "\n";
  if (r.lse.run) {  // audit attention --lse.
    s += Cat("LSE classes against ", r.lse.platform, " (", r.lse.format, " ", Shape(r.lse.shape), "):");
    for (int c = 0; c < kAuditClasses; ++c) s += Cat(" ", ClassKey(c), " ", r.lse.counts[static_cast<size_t>(c)]);
    s += Cat(" (LSE ", r.lse.verdict == AuditVerdict::kPass ? "PASS" : "FAIL", ")\n");
    size_t shown = 0;
    for (const AuditElement& e : r.lse.elements) {
      if (shown++ == 10) break;
      s += Cat("  lse", Index(e.index), " ", G(e.actual, 9), " exact ", G(e.exact_value, 9), " emulated ",
               G(e.emulated, 9), " err/bound ", G(e.error_over_bound, 4), " ", AuditClassName(e.cls),
               e.diagnosis.empty() ? "" : Cat(": ", e.diagnosis), "\n");
    }
  }
  if (r.sr_test.run) {
    s += Cat("Stochastic rounding: away from zero on ", r.sr_test.away, " of ", r.sr_test.inexact,
             " inexact elements, expected ", G(r.sr_test.expected), " +- ", G(r.sr_test.sigma),
             " (z = ", G(r.sr_test.z, 3), ")\n");
  }
  if (const std::string a = AggregateSentence(r); !a.empty()) s += a + "\n";
  if (const std::string b = BestMatchSentence(r); !b.empty()) s += b + "\n";
  for (const PlatformAudit& p : r.platforms) {
    if (p.rec_rtol == 0 && p.rec_atol == 0 && p.rec_ulp == 0) continue;
    s += Cat("Tolerance for ", p.name, " (the tolerance report's rule at this K, N(0, 1) inputs): rtol ",
             G(p.rec_rtol, 3), ", atol ", G(p.rec_atol, 3), ", max ULP ", G(p.rec_ulp, 3),
             ", bound-normalized ", G(p.rec_bn, 3), "\n");
  }
  s += Cat("Formula: ", r.formula, "\n");
  if (!r.elements.empty()) {
    s += Cat("\nListed elements (unexplained first, then the worst of the others; ", r.elements.size(),
             " shown):\n");
    s += "  index              out bits     out            exact          emulated       err(ulp)   err/bound  sum|ab|     class             diagnosis\n";
    for (const AuditElement& e : r.elements) {
      char line[512];
      std::snprintf(line, sizeof line, "  %-18s %-12s %-14s %-14s %-14s %-10s %-10s %-11s %-17s %s\n",
                    Index(e.index).c_str(), Hex(r, e.actual_bits).c_str(), G(e.actual, 8).c_str(),
                    G(e.exact_value, 8).c_str(), G(e.emulated, 8).c_str(), G(e.error_ulp, 4).c_str(),
                    G(e.error_over_bound, 4).c_str(), G(e.abs_sum, 4).c_str(), AuditClassName(e.cls),
                    e.diagnosis.c_str());
      s += line;
    }
  }
  if (!r.notes.empty()) {
    s += "\nNotes:\n";
    for (const std::string& n : r.notes) s += "  - " + n + "\n";
  }
  if (!r.soundness.empty()) {
    s += "\nSoundness of the recommended tolerance on these inputs:\n";
    for (const std::string& n : r.soundness) s += "  - " + n + "\n";
  }
  return s;
}

std::string CompareSummaryText(const CompareResult& c) {
  std::string s = Cat("fpconform compare ", c.port.op, ": ", c.verdict == AuditVerdict::kPass ? "PASS" : "FAIL", " (",
                      c.ref.platforms.empty() ? "" : c.ref.platforms[0].name, " vs ",
                      c.port.platforms.empty() ? "" : c.port.platforms[0].name, ")\n");
  const int64_t total = c.consistent + c.inconsistent;
  s += Cat("Inconsistent elements: ", c.inconsistent, " / ", total, " (", Percent(c.inconsistent, total),
           "): |out - out_ref| above the sum of both platforms' bounds\n");
  if (c.inconsistent > 0) {
    s += Cat("At fault: ref ", c.fault_ref, ", port ", c.fault_port, ", both ", c.fault_both,
             ", neither (each within its own audit, yet too far apart) ", c.fault_neither, "\n");
    for (const auto& [index, side] : c.listed) s += Cat("  ", Index(index), " ", side, "\n");
  }
  if (c.lse.run) {
    const CompareResult::LseCompare& l = c.lse;
    const int64_t rows = l.consistent + l.inconsistent;
    s += Cat("Inconsistent LSE rows: ", l.inconsistent, " / ", rows, " (", Percent(l.inconsistent, rows),
             "): |lse - lse_ref| above the sum of both platforms' LSE bounds\n");
    if (l.inconsistent > 0) {
      s += Cat("LSE at fault: ref ", l.fault_ref, ", port ", l.fault_port, ", both ", l.fault_both, ", neither ",
               l.fault_neither, "\n");
      for (const auto& [index, side] : l.listed) s += Cat("  lse", Index(index), " ", side, "\n");
    }
  }
  for (const std::string& n : c.notes) s += Cat("Note: ", n, "\n");
  s += "\n== reference side\n" + AuditSummaryText(c.ref);
  s += "\n== port side\n" + AuditSummaryText(c.port);
  return s;
}

namespace {

// The fit block (AuditResult::fit): the JSON's "fit" and the Python Audit.fit (same keys).
ojson FitJson(const AuditResult::FitResult& f) {
  ojson j;
  j["ran"] = f.run;
  j["skipped"] = f.skipped;
  if (!f.run) return j;
  j["base"] = f.base;
  j["change"] = f.change;
  j["model_name"] = f.model_name;
  j["model"] = f.model_text;
  j["reproduced"] = f.reproduced;
  j["checked"] = f.checked;
  j["base_best"] = f.base_best;
  j["base_reproduced"] = f.base_reproduced;
  j["candidates"] = f.candidates;
  j["datapaths"] = f.datapaths;
  j["ties"] = f.ties;
  ojson groups = ojson::array();
  for (const AuditResult::FitResult::Group& g : f.groups) {
    groups.push_back({{"base", g.base}, {"change", g.change}, {"reproduced", g.reproduced}, {"of", g.of},
                      {"where", g.where}});
  }
  j["groups"] = groups;
  j["unreproduced"] = f.unreproduced;
  return j;
}

// A double as the form writes it (JsonForm): the number, or in a file a non-finite one as text.
ojson Num(double v, JsonForm form) { return form == JsonForm::kPython ? ojson(v) : Num(v); }

// An element's bits: hex in out's format in a file, the integer for Python.
ojson Bits(const AuditResult& r, uint64_t bits, JsonForm form) {
  return form == JsonForm::kPython ? ojson(bits) : ojson(Hex(r, bits));
}

ojson CountsJson(const std::array<int64_t, kAuditClasses>& counts) {
  ojson j;
  for (int c = 0; c < kAuditClasses; ++c) j[ClassKey(c)] = counts[static_cast<size_t>(c)];
  return j;
}

// The LSE block (AuditResult::lse): the JSON's "lse" (the Python Audit.lse is its kFile form).
ojson LseJson(const AuditResult::LseAudit& a, JsonForm form) {
  ojson j;
  j["platform"] = a.platform;
  j["format"] = a.format;
  j["shape"] = a.shape;
  j["counts"] = CountsJson(a.counts);
  j["verdict"] = AuditVerdictName(a.verdict);
  j["fully_masked_rows"] = a.fully_masked_rows;
  j["convention"] = a.convention;
  ojson els = ojson::array();
  for (const AuditElement& e : a.elements) {
    els.push_back({{"index", e.index}, {"class", AuditClassName(e.cls)}, {"actual", Num(e.actual, form)},
                   {"exact", e.exact}, {"exact_value", Num(e.exact_value, form)},
                   {"emulated", Num(e.emulated, form)}, {"error_ulp", Num(e.error_ulp, form)},
                   {"error_over_bound", Num(e.error_over_bound, form)}, {"bound", Num(e.bound, form)},
                   {"diagnosis", e.diagnosis}});
  }
  j["elements"] = els;
  return j;
}

ojson PlatformsJson(const AuditResult& r, JsonForm form) {
  ojson plats = ojson::array();
  for (const PlatformAudit& p : r.platforms) {
    ojson q;
    q["name"] = p.name;
    for (int c = 0; c < kAuditClasses; ++c) q[ClassKey(c)] = p.counts[static_cast<size_t>(c)];
    q["rec_rtol"] = Num(p.rec_rtol, form);
    q["rec_atol"] = Num(p.rec_atol, form);
    q["rec_ulp"] = Num(p.rec_ulp, form);
    q["rec_bn"] = Num(p.rec_bn, form);
    plats.push_back(q);
  }
  return plats;
}

ojson SummaryJson(const AuditResult& r, JsonForm form) {
  ojson sum;
  sum["mismatched"] = r.mismatched;
  sum["max_abs_diff"] = Num(r.max_abs_diff, form);
  sum["max_abs_index"] = r.max_abs_index;
  sum["max_abs_allowed"] = Num(r.max_abs_allowed, form);
  sum["max_rel_diff"] = Num(r.max_rel_diff, form);
  sum["max_rel_index"] = r.max_rel_index;
  sum["max_rel_allowed"] = Num(r.max_rel_allowed, form);
  return sum;
}

ojson AggregateJson(const AuditResult::Aggregate& g, JsonForm form) {
  return {{"platform", g.platform}, {"pass", g.pass}, {"why", g.why},
          {"elements", g.elements}, {"excluded", g.excluded}, {"unbounded", g.unbounded},
          {"rel_l2", Num(g.rel_l2, form)}, {"rel_l2_limit", Num(g.rel_l2_limit, form)},
          {"emulated_rel_l2", Num(g.emulated_rel_l2, form)}, {"l2", Num(g.l2, form)},
          {"l2_limit", Num(g.l2_limit, form)}, {"correlation", Num(g.correlation, form)},
          {"correlation_limit", Num(g.correlation_limit, form)},
          {"emulated_correlation", Num(g.emulated_correlation, form)}, {"sigma", Num(g.sigma, form)}};
}

ojson ElementsJson(const AuditResult& r, JsonForm form) {
  ojson els = ojson::array();
  for (const AuditElement& e : r.elements) {
    ojson q;
    q["index"] = e.index;
    q["class"] = AuditClassName(e.cls);
    q["actual_bits"] = Bits(r, e.actual_bits, form);
    q["actual"] = Num(e.actual, form);
    q["exact"] = e.exact;
    q["exact_value"] = Num(e.exact_value, form);
    q["emulated_bits"] = Bits(r, e.emulated_bits, form);
    q["emulated"] = Num(e.emulated, form);
    q["error_ulp"] = Num(e.error_ulp, form);
    q["error_over_bound"] = Num(e.error_over_bound, form);
    q["bound"] = Num(e.bound, form);
    q["abs_sum"] = Num(e.abs_sum, form);
    q["diagnosis"] = e.diagnosis;
    els.push_back(q);
  }
  return els;
}

ojson SoundnessJson(const AuditResult& r, JsonForm form) {
  ojson snd = ojson::array();
  for (const auto& [name, rate] : r.soundness_rates) snd.push_back({{"case", name}, {"accepted", Num(rate, form)}});
  return {{"accepted_fractions", snd}, {"sentences", r.soundness}};
}

const char* Bucket(float v) {
  if (v == 0) return nullptr;          // identical: background
  if (std::isnan(v) || std::isinf(v)) return "#000000";
  if (v <= 0.25f) return "#c6dbef";
  if (v <= 1.0f) return "#4292c6";
  if (v <= 10.0f) return "#fd8d3c";
  return "#d7301f";
}

std::string HtmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// The mismatch map as SVG: one rectangle per run of equal colour along a map row.
std::string MapSvg(const AuditResult& r) {
  if (r.map.empty() || r.map_cols == 0) return "<p>No map (empty output).</p>";
  const int64_t mc = (r.map_cols + r.map_cell_cols - 1) / r.map_cell_cols;
  const int64_t mr = static_cast<int64_t>(r.map.size()) / mc;
  const int64_t cell = std::max<int64_t>(1, 512 / std::max(mr, mc));
  std::string s = Cat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", mc * cell, "\" height=\"", mr * cell,
                      "\" style=\"border:1px solid #888\" shape-rendering=\"crispEdges\">");
  for (int64_t y = 0; y < mr; ++y) {
    int64_t x = 0;
    while (x < mc) {
      const char* col = Bucket(r.map[static_cast<size_t>(y * mc + x)]);
      int64_t x1 = x + 1;
      while (x1 < mc && Bucket(r.map[static_cast<size_t>(y * mc + x1)]) == col) ++x1;
      if (col != nullptr) {
        s += Cat("<rect x=\"", x * cell, "\" y=\"", y * cell, "\" width=\"", (x1 - x) * cell,
                 "\" height=\"", cell, "\" fill=\"", col, "\"/>");
      }
      x = x1;
    }
  }
  return s + "</svg>";
}

std::string HistogramSvg(const AuditResult& r) {
  if (r.histogram.empty()) return "";
  int64_t top = 1;
  for (int64_t c : r.histogram) top = std::max(top, c);
  const int w = 14, h = 160;
  std::string s = Cat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", w * 34 + 40, "\" height=\"", h + 40, "\">");
  for (size_t i = 0; i < r.histogram.size(); ++i) {
    const double bh = r.histogram[i] == 0 ? 0 : std::max(1.0, h * std::log1p(static_cast<double>(r.histogram[i])) / std::log1p(static_cast<double>(top)));
    const double lo = -8 + 0.5 * (static_cast<double>(i) - 1);
    s += Cat("<rect x=\"", 20 + static_cast<int>(i) * w, "\" y=\"", h - bh, "\" width=\"", w - 2, "\" height=\"", bh,
             "\" fill=\"", lo + 0.5 <= 0 ? "#4292c6" : "#d7301f", "\"><title>",
             i == 0 ? std::string("below 1e-8 or zero error") : i == 33 ? std::string("above 1e8 or zero bound")
                    : Cat("10^", G(lo), " .. 10^", G(lo + 0.5)), ": ", r.histogram[i], "</title></rect>");
  }
  s += Cat("<text x=\"20\" y=\"", h + 15, "\" font-size=\"11\">10^-8</text>");
  s += Cat("<text x=\"", 20 + 17 * w, "\" y=\"", h + 15, "\" font-size=\"11\">1 (= bound)</text>");
  s += Cat("<text x=\"", 20 + 31 * w, "\" y=\"", h + 15, "\" font-size=\"11\">10^8</text>");
  s += Cat("<text x=\"20\" y=\"", h + 32, "\" font-size=\"11\">|out - exact| / bound, non-identical elements (log count)</text>");
  return s + "</svg>";
}

std::string MarkdownReport(const AuditResult& r) {
  std::string s = Cat("# ", Headline(r), "\n\n");
  int64_t total = 0;
  for (int64_t c : r.counts) total += c;
  s += Cat("**Verdict: ", AuditVerdictName(r.verdict), "**. Mismatched elements: ", r.mismatched, " / ", total, " (",
           Percent(r.mismatched, total), ").\n\n");
  if (!r.max_abs_index.empty()) {
    s += Cat("Greatest absolute difference: ", G(r.max_abs_diff), " at index ", Index(r.max_abs_index),
             " (up to ", G(r.max_abs_allowed), " allowed). Greatest relative difference: ", G(r.max_rel_diff),
             " at index ", Index(r.max_rel_index), " (up to ", G(r.max_rel_allowed), " allowed).\n\n");
  }
  s += "| platform | identical | within_bound | within_tolerance | unexplained | rec rtol | rec atol | rec ULP |\n";
  s += "|---|---|---|---|---|---|---|---|\n";
  for (const PlatformAudit& p : r.platforms) {
    s += Cat("| ", p.name, " | ", p.counts[0], " | ", p.counts[1], " | ", p.counts[2], " | ", p.counts[3], " | ",
             G(p.rec_rtol, 3), " | ", G(p.rec_atol, 3), " | ", G(p.rec_ulp, 3), " |\n");
  }
  if (const std::string b = BestMatchSentence(r); !b.empty()) s += "\n" + b + ".\n";
  if (const std::string a = AggregateSentence(r); !a.empty()) s += "\n" + a + ".\n";
  s += Cat("\nFormula: ", r.formula, "\n");
  if (!r.elements.empty()) {
    s += "\n## Listed elements\n\n| index | out bits | out | exact | emulated | err (ulp) | err / bound | sum abs | class | diagnosis |\n";
    s += "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const AuditElement& e : r.elements) {
      s += Cat("| ", Index(e.index), " | ", Hex(r, e.actual_bits), " | ", G(e.actual, 8), " | `", e.exact, "` | ",
               G(e.emulated, 8), " | ", G(e.error_ulp, 4), " | ", G(e.error_over_bound, 4), " | ", G(e.abs_sum, 4),
               " | ", AuditClassName(e.cls), " | ", e.diagnosis, " |\n");
    }
  }
  if (!r.notes.empty()) {
    s += "\n## Notes\n\n";
    for (const std::string& n : r.notes) s += "- " + n + "\n";
  }
  if (!r.soundness.empty() || !r.soundness_rates.empty()) {
    s += "\n## Soundness of the recommended tolerance on these inputs\n\n| case | accepted |\n|---|---|\n";
    for (const auto& [name, rate] : r.soundness_rates) s += Cat("| ", name, " | ", Percent(static_cast<int64_t>(rate * 1e6), 1000000), " |\n");
    for (const std::string& n : r.soundness) s += "\n- " + n;
    s += "\n";
  }
  s += "\n## Provenance\n\n";
  for (const auto& [k, v] : r.provenance) s += Cat("- ", k, ": `", v, "`\n");
  return s;
}

std::string CsvField(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string o = "\"";
  for (char c : v) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

// The document of r (an AuditResult or a CompareResult): each of `keys` that has(r, key) says it
// has, in that order, with its section.
template <class R, size_t N>
ojson JsonTree(const R& r, const std::array<const char*, N>& keys, bool (*has)(const R&, std::string_view),
               ojson (*section)(const R&, std::string_view, JsonForm), JsonForm form) {
  ojson j;
  for (const char* key : keys) {
    if (has(r, key)) j[key] = section(r, key, form);
  }
  return j;
}

// A compare's side-at-fault counts and listed elements (CompareResult, and its LseCompare).
template <class C>
ojson AtFaultJson(const C& c) {
  return {{"ref", c.fault_ref}, {"port", c.fault_port}, {"both", c.fault_both}, {"neither", c.fault_neither}};
}
template <class C>
ojson ListedJson(const C& c) {
  ojson listed = ojson::array();
  for (const auto& [index, side] : c.listed) listed.push_back({{"index", index}, {"at_fault", side}});
  return listed;
}

}  // namespace

bool AuditJsonHas(const AuditResult& r, std::string_view key) {
  if (key == "sr_test") return r.sr_test.run;
  if (key == "aggregate") return r.aggregate.run;
  if (key == "fit") return r.fit.run || !r.fit.skipped.empty();
  if (key == "lse") return r.lse.run;
  return std::find(kAuditJsonKeys.begin(), kAuditJsonKeys.end(), key) != kAuditJsonKeys.end();
}

ojson AuditJsonSection(const AuditResult& r, std::string_view key, JsonForm form) {
  if (!AuditJsonHas(r, key)) return nullptr;
  if (key == "fpconform_audit") return 1;
  if (key == "op") return r.op;
  if (key == "verdict") return AuditVerdictName(r.verdict);
  if (key == "counts") return CountsJson(r.counts);
  if (key == "platforms") return PlatformsJson(r, form);
  if (key == "best_platform") return r.best_platform;
  if (key == "k") return r.k;
  if (key == "shape") return r.out_shape;
  if (key == "output_format") return r.out_format;
  if (key == "input_format") return r.input_format;
  if (key == "formula") return r.formula;
  if (key == "summary") return SummaryJson(r, form);
  if (key == "sr_test") {
    return {{"inexact", r.sr_test.inexact}, {"away", r.sr_test.away}, {"expected", Num(r.sr_test.expected, form)},
            {"sigma", Num(r.sr_test.sigma, form)}, {"z", Num(r.sr_test.z, form)}};
  }
  if (key == "aggregate") return AggregateJson(r.aggregate, form);
  if (key == "elements") return ElementsJson(r, form);
  if (key == "notes") return r.notes;
  if (key == "soundness") return SoundnessJson(r, form);
  if (key == "map") {
    return {{"rows", r.map_rows}, {"cols", r.map_cols}, {"cell_rows", r.map_cell_rows},
            {"cell_cols", r.map_cell_cols}};
  }
  if (key == "histogram") {
    return {{"bins", "log10(|out - exact| / bound): [below -8 or zero error], 32 bins of 0.5 from -8 to 8, [above 8 or zero bound]"},
            {"counts", r.histogram}};
  }
  if (key == "provenance") {
    ojson prov;  // null when there is none, as the document has always written it.
    for (const auto& [k, v] : r.provenance) prov[k] = v;
    return prov;
  }
  if (key == "fit") return FitJson(r.fit);
  return LseJson(r.lse, form);  // "lse", the last key.
}

ojson AuditJsonTree(const AuditResult& r, JsonForm form) {
  return JsonTree(r, kAuditJsonKeys, AuditJsonHas, AuditJsonSection, form);
}

std::string AuditToJson(const AuditResult& r) { return AuditJsonTree(r, JsonForm::kFile).dump(1) + "\n"; }

bool CompareJsonHas(const CompareResult& c, std::string_view key) {
  if (key == "lse") return c.lse.run;  // compare attention with both LSEs.
  return std::find(kCompareJsonKeys.begin(), kCompareJsonKeys.end(), key) != kCompareJsonKeys.end();
}

ojson CompareJsonSection(const CompareResult& c, std::string_view key, JsonForm form) {
  if (!CompareJsonHas(c, key)) return nullptr;
  if (key == "fpconform_compare") return 1;
  if (key == "op") return c.port.op;
  if (key == "verdict") return AuditVerdictName(c.verdict);
  if (key == "consistent") return c.consistent;
  if (key == "inconsistent") return c.inconsistent;
  if (key == "at_fault") return AtFaultJson(c);
  if (key == "listed") return ListedJson(c);
  if (key == "lse") {  // AUDIT.md "compare attention --lse".
    const CompareResult::LseCompare& l = c.lse;
    return {{"consistent", l.consistent},
            {"inconsistent", l.inconsistent},
            {"at_fault", AtFaultJson(l)},
            {"listed", ListedJson(l)}};
  }
  if (key == "notes") return c.notes;
  if (key == "ref") return AuditJsonTree(c.ref, form);
  if (key == "port") return AuditJsonTree(c.port, form);
  return nullptr;
}

ojson CompareJsonTree(const CompareResult& c, JsonForm form) {
  return JsonTree(c, kCompareJsonKeys, CompareJsonHas, CompareJsonSection, form);
}

std::string CompareToJson(const CompareResult& c) { return CompareJsonTree(c, JsonForm::kFile).dump(1) + "\n"; }

std::vector<std::pair<std::string, std::string>> AuditReportFiles(const AuditResult& r) {
  std::string csv = "index,class,actual_bits,actual,exact,emulated_bits,emulated,error_ulp,error_over_bound,bound,abs_sum,diagnosis\n";
  const bool all = !r.unexplained.empty() || r.unexplained_total == 0;
  for (const AuditElement& e : all ? r.unexplained : r.elements) {
    if (e.cls != AuditClass::kUnexplained) continue;
    std::string idx;
    for (size_t i = 0; i < e.index.size(); ++i) idx += Cat(i ? " " : "", e.index[i]);
    csv += Cat(idx, ",", AuditClassName(e.cls), ",", Hex(r, e.actual_bits), ",", FormatDouble(e.actual), ",",
               e.exact, ",", Hex(r, e.emulated_bits), ",", FormatDouble(e.emulated), ",", FormatDouble(e.error_ulp),
               ",", FormatDouble(e.error_over_bound), ",", FormatDouble(e.bound), ",", FormatDouble(e.abs_sum), ",",
               CsvField(e.diagnosis), "\n");
  }
  std::string html = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>fpconform audit</title>"
                     "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
                     "pre{background:#f4f4f4;padding:1em;overflow-x:auto}</style></head><body>";
  html += Cat("<h1>", HtmlEscape(Headline(r)), "</h1>");
  html += Cat("<pre>", HtmlEscape(AuditSummaryText(r)), "</pre>");
  html += Cat("<h2>Mismatch map</h2><p>|out - exact| / bound over the output viewed as ", r.map_rows, " x ",
              r.map_cols, " (each cell: the worst of ", r.map_cell_rows, " x ", r.map_cell_cols,
              " elements). White: identical; light blue: within a quarter of the bound; blue: within "
              "the bound; orange: up to 10x the bound; red: beyond; black: non-finite.</p>");
  html += MapSvg(r);
  html += Cat("<h2>Error histogram</h2>", HistogramSvg(r));
  html += "</body></html>\n";
  return {{"report.md", MarkdownReport(r)},
          {"elements.csv", csv},
          {"report.json", AuditToJson(r)},
          {"report.html", html}};
}

}  // namespace fpconform::reports
