// The sweep's row tables: title, description and columns (name, type, unit, description)
// (sweep_tables.h); RunSweep (sweep.cc) fills their rows.
#include "reports/sweep_tables.h"

#include <string>
#include <utility>
#include <vector>

#include "reports/report.h"
#include "reports/sweep.h"

namespace fpconform::reports {
namespace sweep_internal {
namespace {

constexpr auto I = IntColumn;
constexpr auto S = StringColumn;
constexpr auto F = FloatColumn;

// One row table's layout. Every row table starts with the columns "unit" and "item", the key
// MergeReports sorts shards' rows by; `unit` describes the first.
struct RowTableSpec {
  std::string name;
  std::string title;
  std::string description;
  std::string unit = "sweep unit index";
  std::vector<Column> columns;  // After unit and item.
};

Table RowTable(RowTableSpec spec) {
  Table t;
  t.name = std::move(spec.name);
  t.title = std::move(spec.title);
  t.description = std::move(spec.description);
  t.columns = {I("unit", std::move(spec.unit)), I("item", "row within the unit")};
  for (Column& c : spec.columns) t.columns.push_back(std::move(c));
  return t;
}

}  // namespace

Table ToleranceTable() {
  return RowTable({
      .name = "tolerance",
      .title = "Observed errors and recommended tolerances",
      .description =
          "One row per (op, dtype, platform, distribution, K). Errors are measured against the "
          "exact value of the computation the platform was given. Recommended tolerances follow "
          "the rule in the provenance; `note` says when a recommendation was capped by the "
          "worst-case bound or lies above the probabilistic estimate lambda*sqrt(K).",
      .unit = "sweep unit (op, dtype, distribution, K) index",
      .columns = {
          S("op", "matmul (dot along K) or sum"),
          S("dtype", "input dtype of the row"),
          S("platform", "accumulation model (accumulation/models) or int32-exact"),
          S("input_format", "format the platform receives (a operand)"),
          S("output_format", "format of the compared output"),
          S("accumulator", "accumulation format (/fN: only N fraction bits kept)"),
          S("distribution", "input distribution"),
          I("k", "reduction length"),
          I("samples", "dot products (outputs) measured"),
          S("seed", "sweep seed (stream keys: unit, K, sample)"),
          F("ulp_max", "ulp", "max |ULP error| of the output"),
          F("ulp_p99", "ulp", "99th percentile (nearest rank)"),
          F("ulp_median", "ulp", "median"),
          F("bn_max", "u*sum|ab|", "max bound-normalized error"),
          F("bn_p99", "u*sum|ab|", "99th percentile"),
          F("bn_median", "u*sum|ab|", "median"),
          F("rel_max", "", "max relative error"),
          F("rel_p99", "", "99th percentile"),
          F("rel_median", "", "median"),
          F("bound_ulp", "ulp", "worst-case analytical bound, max over samples"),
          F("bound_bn", "u*sum|ab|", "worst-case analytical bound, max over samples"),
          F("prob_bn", "u*sum|ab|", "probabilistic estimate lambda*sqrt(K)"),
          F("rec_ulp", "ulp", "recommended max ULP error"),
          F("rec_bn", "u*sum|ab|", "recommended bound-normalized tolerance"),
          F("rec_rtol", "", "recommended assert_close rtol"),
          F("rec_atol", "", "recommended assert_close atol"),
          S("note", "flags: capped by the worst-case bound, above the probabilistic estimate, "
                    "non-finite outputs"),
          F("torch_rtol", "", "torch.testing.assert_close default rtol for the output dtype"),
          F("torch_atol", "", "torch default atol"),
          F("torch_rejects", "", "fraction of these correct outputs torch's default rejects"),
          F("jax_tol", "", "JAX test default tolerance (atol = rtol)"),
          F("jax_rejects", "", "fraction of these correct outputs JAX's default rejects"),
      },
  });
}

Table CrossTable() {
  return RowTable({
      .name = "cross_platform",
      .title = "Cross-platform envelopes",
      .description =
          "Difference between two platforms' outputs on the same inputs (each quantizing them to "
          "its own input format). An envelope (several b platforms) takes, per sample, the member "
          "farthest from a. Use rec_rtol/rec_atol with the CUDA output as `expected`. The ULP "
          "distance counts every representable value between the two outputs, so outputs of "
          "opposite sign near zero give huge counts: under cancellation use the bound-normalized "
          "or assert_close columns.",
      .columns = {
          S("op", "matmul, sum or quantize"),
          S("dtype", "input dtype"),
          S("name", "pair name (sweep file)"),
          S("platform_a", "reference platform (CUDA side)"),
          S("platform_b", "port platform(s); several joined by '+' form an envelope (worst "
                          "member)"),
          S("distribution", "input distribution"),
          I("k", "reduction length (quantize: elements)"),
          I("samples", "outputs compared"),
          F("diff_ulp_max", "ulp", "max integer ULP distance between the two outputs"),
          F("diff_ulp_p99", "ulp", "99th percentile"),
          F("diff_bn_max", "u*sum|ab|", "max |a - b| in units of platform a's u*sum|ab|"),
          F("diff_bn_p99", "u*sum|ab|", "99th percentile"),
          F("diff_rel_max", "", "max |a - b| / |a|"),
          F("worst_bn", "u*sum|ab|", "worst case: bound_a + bound_b + |x_a - x_b|, max over "
                                     "samples"),
          F("rec_ulp", "ulp", "recommended ULP tolerance between the two outputs"),
          F("rec_bn", "u*sum|ab|", "recommended bound-normalized tolerance"),
          F("rec_rtol", "", "recommended assert_close rtol (expected = platform a)"),
          F("rec_atol", "", "recommended assert_close atol"),
      },
  });
}

Table PowerTable() {
  return RowTable({
      .name = "power",
      .title = "Tolerance power against known-wrong variants",
      .description =
          "Fraction of known-wrong outputs each tolerance rejects (1 = catches every sample). A "
          "value below 0.5 means the tolerance passes that bug more often than not.",
      .columns = {
          S("op", "matmul or sum"),
          S("dtype", "input dtype"),
          S("platform", "accumulation model"),
          S("distribution", "input distribution"),
          I("k", "reduction length"),
          S("mutation", "known-wrong variant (sweep.h)"),
          F("rejected_assert_close", "", "fraction of mutant outputs the recommended rtol/atol "
                                         "rejects"),
          F("rejected_ulp", "", "... the recommended ULP tolerance rejects"),
          F("rejected_bn", "", "... the recommended bound-normalized tolerance rejects"),
          F("rejected_torch", "", "... torch's default rejects"),
          F("rejected_jax", "", "... JAX's default rejects"),
      },
  });
}

Table QuantizeTable() {
  return RowTable({
      .name = "quantize",
      .title = "Elementwise quantization (per-tensor scale amax / max)",
      .description =
          "Quantization of float inputs to 8-bit formats with a per-tensor scale amax / max "
          "(int8: 127), RNE with saturation. rtol = factor * the largest relative error among "
          "elements in the format's normal range; atol covers the subnormal and zero ones.",
      .columns = {
          S("format", "target format"),
          S("distribution", "input distribution"),
          I("elements", "elements per tensor"),
          I("samples", "tensors"),
          F("ulp_max", "ulp", "max |q - x/s| in ulp of the target format"),
          F("ulp_p99", "ulp", "99th percentile"),
          F("rel_max", "", "max |q s - x| / |x|"),
          F("rel_p99", "", "99th percentile"),
          F("saturated", "", "fraction of elements where saturation changed the result (RNE "
                             "alone would have overflowed)"),
          F("rec_rtol", "", "recommended rtol (dequantized vs input)"),
          F("rec_atol", "", "recommended atol"),
          F("rec_ulp", "ulp", "recommended ULP tolerance"),
      },
  });
}

Table CompositeTable() {
  return RowTable({
      .name = "composite",
      .title = "Composite kernels: activations, softmax and norms",
      .description =
          "One row per (function, model, distribution, row length). Each model's emulated output "
          "is measured against the correctly rounded value; its bound B covers every "
          "implementation of the model's formula within its declared accuracies and any reduction "
          "order. The recommendations cover max(factor * observed error, B) per element, so no "
          "conforming output fails them.",
      .unit = "sweep unit (function, distribution, length) index",
      .columns = {
          S("function", "elementwise function or op along the last axis"),
          S("platform", "composite model (composite/models)"),
          S("input_format", "format of x"),
          S("output_format", "format of the output"),
          S("distribution", "input distribution ([composite] in sweep.h)"),
          I("n", "row length (elementwise: values per unit)"),
          I("samples", "rows (elementwise: values)"),
          S("exact_model", "yes: the model reproduces the library's bits; no: one conforming "
                           "implementation, the bound covers all"),
          F("ulp_max", "ulp", "max |ULP error| of the model's emulated output"),
          F("ulp_p99", "ulp", "99th percentile"),
          F("bound_ulp", "ulp", "max over elements of the model's bound B / ulp(x)"),
          F("rec_ulp", "ulp", "recommended max ULP error"),
          F("rec_rtol", "", "recommended assert_close rtol"),
          F("rec_atol", "", "recommended assert_close atol"),
          I("non_finite", "elements whose exact or emulated value is not finite (left out)"),
      },
  });
}

Table CompositePowerTable() {
  return RowTable({
      .name = "composite_power",
      .title = "Composite kernels: tolerance power against known-wrong variants",
      .description =
          "Share of known-wrong outputs (the other GELU form, a bfloat16 input cast, a dropped "
          "term, eps outside the square root, the unbiased variance, a missing weight or bias) "
          "that the row's recommended rtol/atol rejects (1 = every sample caught).",
      .columns = {
          S("function", "elementwise function or op along the last axis"),
          S("platform", "composite model"),
          S("distribution", "input distribution"),
          I("n", "row length (elementwise: values per unit)"),
          S("mutation", "known-wrong variant (sweep.h, [composite])"),
          F("rejected", "", "share of samples (rows; elementwise: values) with an element "
                            "outside the recommended rtol/atol"),
      },
  });
}

Table CompositeCrossTable() {
  return RowTable({
      .name = "composite_cross",
      .title = "Composite kernels: two models on the same inputs",
      .description =
          "Two models of one function on the same inputs (e.g. torch CUDA and an NKI port): their "
          "emulated outputs' distance, and what two conforming implementations may differ by (the "
          "sum of the two bounds); rec_rtol/rec_atol compare the port directly with the reference.",
      .columns = {
          S("function", "elementwise function or op along the last axis"),
          S("platform_a", "reference model (e.g. the CUDA one)"),
          S("platform_b", "port model (e.g. the NKI one)"),
          S("distribution", "input distribution"),
          I("n", "row length (elementwise: values per unit)"),
          I("samples", "rows (elementwise: values)"),
          F("diff_ulp_max", "ulp", "max |y_a - y_b| of the emulated outputs, in ulp of a's "
                                   "output at x"),
          F("allowed_ulp_max", "ulp", "max (B_a + B_b) / ulp(x): what two conforming "
                                      "implementations may differ"),
          F("rec_rtol", "", "recommended rtol for the port against the reference"),
          F("rec_atol", "", "recommended atol"),
      },
  });
}

Table AttentionTable() {
  return RowTable({
      .name = "attention",
      .title = "Attention: observed errors and recommended tolerances",
      .description =
          "One row per (model, distribution, S, D, mask). Each model's emulated output is "
          "measured against the exact value; its bound B covers every implementation the model "
          "admits. The recommendations cover max(factor * observed error, B) per element, so no "
          "conforming output fails them; they shrink with S as the outputs do (|O| about |V| / "
          "sqrt(ESS)) and grow when the softmax is peaked (ESS near 1). The *_rejects columns "
          "give the share of cases of the conforming output each criterion rejects (false alarms).",
      .unit = "sweep unit (distribution, S, D, mask) index",
      .columns = {
          S("platform", "attention model (composite/attention_models)"),
          S("dtype", "format of Q, K and V"),
          S("output_format", "format of O"),
          S("distribution", "input distribution ([attention] in sweep.h)"),
          I("s", "sequence length (queries = keys)"),
          I("d", "head dimension (D = D_v)"),
          S("causal", "yes: top-left causal mask"),
          I("rows", "query rows measured (evenly spaced)"),
          I("cases", "cases the rows are split into (one case: what one test compares)"),
          F("ess_median", "", "median over rows of the effective sample size 1 / sum_j P_j^2"),
          F("ulp_max", "ulp", "max |ULP error| of the model's emulated output"),
          F("ulp_p99", "ulp", "99th percentile"),
          F("abs_max", "", "max |y - x| of the emulated output"),
          F("bound_ulp", "ulp", "max over elements of the model's bound B / ulp(x)"),
          F("bound_abs", "", "max over elements of B"),
          F("prob_abs", "", "max over elements of the probabilistic estimate min(lambda sigma_i "
                            "+ ulp(x)/2, B_i) (sweep.h, [attention]; sigma_i about u |V| / "
                            "sqrt(ESS))"),
          F("prob_rtol", "", "probabilistic recommendation: rtol covering max(factor * observed, "
                             "the estimate) per element"),
          F("prob_atol", "", "probabilistic recommendation: atol"),
          F("rec_ulp", "ulp", "recommended max ULP error"),
          F("rec_rtol", "", "recommended assert_close rtol"),
          F("rec_atol", "", "recommended assert_close atol"),
          F("rec_rejects", "", "share of cases of the emulated output the recommendation rejects "
                               "(0 by construction)"),
          F("prob_rejects", "", "... the probabilistic recommendation rejects (0 by construction)"),
          F("nki_rejects", "", "... nki-library's maxAllClose(rtol=2e-2, atol=1e-5) rejects"),
          F("allclose_rejects", "", "... np.allclose(rtol=2e-2, atol=1e-5) rejects"),
          F("fa_rejects", "", "... FlashAttention's test rule rejects"),
          I("unbounded", "elements the model gives no bound for (e.g. scores too large for its "
                         "error analysis): the recommendation covers factor x their observed "
                         "error only"),
      },
  });
}

Table AttentionPowerTable() {
  return RowTable({
      .name = "attention_power",
      .title = "Attention: what each criterion accepts of known-wrong outputs",
      .description =
          "Share of the cases a known-wrong kernel changes (the scale twice or missing, the "
          "causal mask missing, the last key block dropped, the row sum in bfloat16, K read "
          "transposed, the softmax over the query axis) that each criterion accepts: 0 = every "
          "such case caught.",
      .columns = {
          S("platform", "attention model"),
          S("distribution", "input distribution"),
          I("s", "sequence length"),
          I("d", "head dimension"),
          S("causal", "yes: causal mask"),
          S("mutation", "known-wrong variant (sweep.h, [attention])"),
          I("affected", "cases whose mutated output differs from the correctly rounded one"),
          F("rec_accepts", "", "share of the affected cases the recommended rtol/atol accepts "
                               "(lower is better)"),
          F("prob_accepts", "", "... the probabilistic recommendation accepts"),
          F("nki_accepts", "", "... nki-library's maxAllClose(rtol=2e-2, atol=1e-5) accepts"),
          F("allclose_accepts", "", "... np.allclose(rtol=2e-2, atol=1e-5) accepts"),
          F("fa_accepts", "", "... FlashAttention's test rule accepts"),
      },
  });
}

Table AttentionCrossTable() {
  return RowTable({
      .name = "attention_cross",
      .title = "Attention: two models on the same inputs",
      .description =
          "Two attention models on the same inputs (e.g. FlashAttention-2 on CUDA and NKI "
          "flash_fwd): their emulated outputs' distance, what two conforming implementations may "
          "differ by (the sum of the two bounds), and the rtol/atol that accepts every such pair.",
      .columns = {
          S("platform_a", "reference model (e.g. the CUDA one)"),
          S("platform_b", "port model (e.g. the NKI one)"),
          S("distribution", "input distribution"),
          I("s", "sequence length"),
          I("d", "head dimension"),
          S("causal", "yes: causal mask"),
          I("elements", "output elements compared"),
          F("diff_abs_max", "", "max |y_a - y_b| of the emulated outputs"),
          F("diff_ulp_max", "ulp", "... in ulp of a's output at x"),
          F("allowed_ulp_max", "ulp", "max (B_a + B_b) / ulp(x): what two conforming "
                                      "implementations may differ by"),
          F("rec_rtol", "", "recommended rtol for the port against the reference (accepts every "
                            "conforming pair)"),
          F("rec_atol", "", "recommended atol"),
          F("prob_rtol", "", "probabilistic rtol: covers max(factor * diff, min(lambda "
                             "sqrt(sigma_a^2 + sigma_b^2) + ulp(x), B_a + B_b))"),
          F("prob_atol", "", "probabilistic atol"),
      },
  });
}

}  // namespace sweep_internal

std::vector<Table> SweepTableSchemas() {
  return {sweep_internal::ToleranceTable(), sweep_internal::CrossTable(),
          sweep_internal::PowerTable(), sweep_internal::QuantizeTable(),
          sweep_internal::CompositeTable(), sweep_internal::CompositePowerTable(),
          sweep_internal::CompositeCrossTable(), sweep_internal::AttentionTable(),
          sweep_internal::AttentionPowerTable(), sweep_internal::AttentionCrossTable()};
}

}  // namespace fpconform::reports
