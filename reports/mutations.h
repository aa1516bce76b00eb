// Known-wrong computations shared by the tolerance sweep (its power table) and the audit (its
// diagnoses and soundness checks), so both mean the same thing by each name.
#ifndef FPCONFORM_REPORTS_MUTATIONS_H_
#define FPCONFORM_REPORTS_MUTATIONS_H_

#include "accumulation/model.h"
#include "formats/format_spec.h"

namespace fpconform::reports {

// The bf16-accumulation mutant: a sequential chain of FMAs (sum: additions) into a bfloat16
// accumulator, RNE, output bfloat16.
inline Model Bf16AccumulationModel(const FormatSpec& fa, const FormatSpec& fb, bool sum) {
  Model m;
  m.name = "mutation-bf16-accumulation";
  m.description = "sequential FMA chain accumulating in bfloat16";
  m.op_sum = sum;
  m.inputs.a = &fa;
  m.inputs.b = &fb;
  m.adder.kind = sum ? AdderKind::kIeee : AdderKind::kFma;
  m.accumulator.format = &BFloat16();
  m.accumulator.fraction_bits = BFloat16().fraction_bits;
  m.chain.kind = ChainKind::kSequential;
  m.output.format = &BFloat16();
  return m;
}

}  // namespace fpconform::reports

#endif  // FPCONFORM_REPORTS_MUTATIONS_H_
