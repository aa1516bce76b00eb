// Implementation models of elementwise functions, as data (composite/MODEL_FORMAT.md): how a
// library computes exp, exp2, log, tanh, sigmoid, silu, gelu, gelu_tanh, rsqrt or reciprocal of
// each element, as a formula per function (composite/formula.h) in a compute format, with the
// accuracy of the elementary functions it calls, the input and output formats, whether the
// compiler may contract a*b+c into an fma, and where each of those facts comes from.
//
// A model gives, per input element x (bits of its input format):
//   * Emulate: the output bits of the implementation whose every step is correctly rounded
//     (bit-exact where the library's elementary functions are, a representative point
//     otherwise: `exact()` says which), and
//   * Enclose: [lo, hi], values of the output format, holding the output of every implementation
//     that follows the formula with elementary functions within their accuracy (formula.h's
//     proof; the final conversion into the output format is RNE, monotone).
// A function given as "correctly_rounded" is the correctly rounded fn(x) in the output format
// (oracles/elementary.h decides it); its enclosure is that one value.
//
// Errors (ParseElementwiseModel, LoadElementwiseModel; InvalidArgument): "file:line: key: what"
// (cases/toml_reader.h), a formula's error prefixed with its key ("functions.gelu: column 12:
// unknown name 'erff'"), a compute format narrower than the input format, a key without its
// provenance entry or a provenance entry for no key.
//
// Example (composite/models/torch-cuda-f32.toml):
//   absl::StatusOr<ElementwiseModel> m = LoadElementwiseModel("composite/models/torch-cuda-f32.toml");
//   const ElementwiseFunction* gelu = m->Find("gelu");
//   uint64_t y = gelu->Emulate(0x3F800000 /*1.0f*/);   // 0.8413447 in float32
#ifndef FPCONFORM_COMPOSITE_ELEMENTWISE_MODEL_H_
#define FPCONFORM_COMPOSITE_ELEMENTWISE_MODEL_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "composite/formula.h"
#include "formats/format_spec.h"

namespace fpconform::composite {

// The functions an elementwise model may implement (the audit's --fn), in this order.
std::span<const std::string_view> ElementwiseFunctionNames();

// One function of a model.
struct ElementwiseFunction {
  std::string name;                 // One of ElementwiseFunctionNames().
  bool correctly_rounded = false;   // "correctly_rounded": no formula.
  Formula formula;                  // Otherwise.
  const FormatSpec* input = nullptr;
  const FormatSpec* output = nullptr;
  AccuracyTable accuracy{};
  bool contract = false;
  // Whether Emulate is the library's exact result: every elementary function the formula calls
  // is correctly rounded (and no contraction is allowed, or the formula has no a*b+c).
  bool exact() const;
  // The every-step-correctly-rounded result (output bits) for input bits x. Not for
  // correctly_rounded functions (the audit asks the oracle).
  uint64_t Emulate(uint64_t x) const;
  // Every conforming implementation's output for x lies in [lo, hi] (output format values as
  // binary64; NaN end points: no enclosure). Not for correctly_rounded functions.
  Enclosure Enclose(uint64_t x) const;
};

struct ElementwiseModel {
  std::string name;
  std::string description;
  const FormatSpec* input = nullptr;
  const FormatSpec* compute = nullptr;
  const FormatSpec* output = nullptr;
  bool contract = false;
  AccuracyTable accuracy{};
  std::vector<ElementwiseFunction> functions;
  // (dotted key, source), in file order; and the keys whose values are unconfirmed.
  std::vector<std::pair<std::string, std::string>> provenance;
  std::vector<std::string> unconfirmed;

  const ElementwiseFunction* Find(std::string_view fn) const;
};

absl::StatusOr<ElementwiseModel> ParseElementwiseModel(std::string_view toml_text,
                                                       std::string_view file_name);
// Reads a model file (a regular file of at most 16 MiB, formats/user_file.h); its `name` must be
// the file's stem.
absl::StatusOr<ElementwiseModel> LoadElementwiseModel(const std::string& path);

// The models of a directory (every *.toml), read once, in name order. A bad file is an error
// naming it.
absl::StatusOr<std::vector<ElementwiseModel>> LoadElementwiseModels(const std::string& dir);

}  // namespace fpconform::composite

#endif  // FPCONFORM_COMPOSITE_ELEMENTWISE_MODEL_H_
