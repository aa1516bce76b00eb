// Families of models around a preset, for fitting a model to ordinary outputs (`fpconform audit
// matmul --platform auto`, reports/AUDIT.md "Fit"): a real kernel often runs a preset's datapath
// in another order (cuBLAS picks a split-K per shape), so the fit tries the preset's datapath
// with the chain and the datapath parameters changed one family at a time and keeps what
// reproduces the most output elements bit for bit.
//
// Families (each variant is the base model with a few keys set; its label names them):
//   SplitKFamily     chain.kind = "split_k" with slices 2..max_slices, slice_multiple in
//                    {G, 16, 32, 64, 128, 256} (multiples of the adder's group G only), order
//                    fixed | reverse, combine sequential | pairwise. Variants that cut K into the
//                    same non-empty slices in the same order are one variant (the first: fewest
//                    slices, smallest multiple); with at most two non-empty slices and no c in the
//                    chain (epilogue.c = "after", or has_c false) the two orders are one (x + y =
//                    y + x), and so are the two combines (also with three: (P0 + P1) + P2). Equal results up to the sign of a zero
//                    sum (an empty slice adds +0).
//   DatapathFamily   one key at a time: adder.group in {4, 8, 16, 32} (fused adders; chain lengths
//                    that must be multiples of it stay valid), adder.fraction_bits in 23..27
//                    (fused adders), epilogue.c chain | after (has_c),
//                    inputs.convert_rounding rtz | rne | rna (with inputs.convert_to),
//                    chain.every in {32, 64, 128, 256, 512, 1024} (promote chains).
// The base itself is not in a family (the caller has it).
//
// A variant's model file (VariantModelText): the base file's TOML with the variant's keys set,
// `name` and `description` replaced, a provenance entry per key set (the caller's evidence) and
// the keys listed as unconfirmed; parsed back (ParseModel) before it is returned, so the text is
// always a valid model file.
//
// Example:
//   const Model& base = *catalog.Find("nvidia-h100-bf16-cublas-s1688-splitk3");
//   std::vector<FitVariant> f = SplitKFamily(base, /*k=*/4096, /*has_c=*/false);
//   // f[i].label: "chain split_k, slices 6, slice_multiple 128, order fixed, combine sequential"
//   std::string toml =
//       *VariantModelText(base_file_text, f[i], "fit-1", "fitted", "fit: 4096/4096");
#ifndef FPCONFORM_ACCUMULATION_MODEL_FIT_H_
#define FPCONFORM_ACCUMULATION_MODEL_FIT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "accumulation/model.h"

namespace fpconform {

struct FitVariant {
  std::string label;  // "chain split_k, slices 6, ..."; "adder.group 8"
  // (dotted key, TOML value text) set on the base, e.g. {"chain.slices", "6"}, {"chain.order",
  // "\"fixed\""}; an empty text removes the key; keys of the base's [chain] not listed here
  // (except permutation) are removed when chain.kind is set.
  std::vector<std::pair<std::string, std::string>> set;
  Model model;
};

std::vector<FitVariant> SplitKFamily(const Model& base, int k, bool has_c, int max_slices = 16);
std::vector<FitVariant> DatapathFamily(const Model& base, bool has_c);

// The model file text of `v` (see above); `evidence` becomes every set key's provenance.
// Errors: InvalidArgument when base_toml is not TOML or the result does not parse as a model
// (the message says why).
absl::StatusOr<std::string> VariantModelText(const std::string& base_toml, const FitVariant& v,
                                             const std::string& name,
                                             const std::string& description,
                                             const std::string& evidence);

}  // namespace fpconform

#endif  // FPCONFORM_ACCUMULATION_MODEL_FIT_H_
