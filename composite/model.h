// Implementation models of composite kernels, as data (composite/MODEL_FORMAT.md): how a library
// computes an elementwise function (kind "elementwise": exp, exp2, log, tanh, sigmoid, silu, gelu,
// gelu_tanh, rsqrt, reciprocal of each element) or an op along one axis (kind "axis": softmax,
// log_softmax, rmsnorm, layernorm of each row), as a formula per function (composite/formula.h;
// row formulas for "axis") in a compute format, with the accuracy of the elementary functions it
// calls, the input and output formats, whether the compiler may contract a*b+c into an fma, and
// where each of those facts comes from.
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
// Errors (ParseCompositeModel, LoadCompositeModel; InvalidArgument): "file:line: key: what"
// (cases/toml_reader.h), a formula's error prefixed with its key ("functions.gelu: column 12:
// unknown name 'erff'"), a compute format narrower than the input format, a key without its
// provenance entry or a provenance entry for no key.
//
// Example (composite/models/torch-cuda-f32.toml):
//   absl::StatusOr<CompositeModel> m = LoadCompositeModel("composite/models/torch-cuda-f32.toml");
//   const CompositeFunction* gelu = m->Find("gelu");
//   uint64_t y = gelu->Emulate(0x3F800000 /*1.0f*/);   // 0.8413447 in float32
#ifndef FPCONFORM_COMPOSITE_MODEL_H_
#define FPCONFORM_COMPOSITE_MODEL_H_

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

enum class CompositeKind : uint8_t { kElementwise, kAxis };

// The functions a model of that kind may implement, in this order: the audit's --fn for
// elementwise, the op of `fpconform audit softmax|log_softmax|rmsnorm|layernorm` for axis.
std::span<const std::string_view> ElementwiseFunctionNames();
std::span<const std::string_view> AxisFunctionNames();

// One function of a model.
struct CompositeFunction {
  std::string name;                 // One of the kind's function names.
  CompositeKind kind = CompositeKind::kElementwise;
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

  // Axis functions, one row: x (n bits of `input`), weight and bias (n bits of their formats, or
  // empty), eps (the kernel's argument; rounded to the compute format as the kernel's float
  // does). The formats of weight and bias must convert into the compute format exactly
  // (InvalidArgument otherwise). Not for correctly_rounded functions.
  struct Row {
    std::span<const uint64_t> x;
    const FormatSpec* weight_format = nullptr;
    std::span<const uint64_t> weight;
    const FormatSpec* bias_format = nullptr;
    std::span<const uint64_t> bias;
    double eps = 0;
  };
  absl::Status EmulateRow(const Row& row, std::span<uint64_t> out) const;
  absl::Status EncloseRow(const Row& row, std::span<Enclosure> out) const;
};

struct CompositeModel {
  std::string name;
  std::string description;
  CompositeKind kind = CompositeKind::kElementwise;
  const FormatSpec* input = nullptr;
  const FormatSpec* compute = nullptr;
  const FormatSpec* output = nullptr;
  bool contract = false;
  AccuracyTable accuracy{};
  std::vector<CompositeFunction> functions;
  // (dotted key, source), in file order; and the keys whose values are unconfirmed.
  std::vector<std::pair<std::string, std::string>> provenance;
  std::vector<std::string> unconfirmed;

  const CompositeFunction* Find(std::string_view fn) const;
};

absl::StatusOr<CompositeModel> ParseCompositeModel(std::string_view toml_text,
                                                       std::string_view file_name);
// Reads a model file (a regular file of at most 16 MiB, base/user_file.h); its `name` must be
// the file's stem.
absl::StatusOr<CompositeModel> LoadCompositeModel(const std::string& path);

// The models of a directory (every *.toml), read once, in name order. A bad file is an error
// naming it.
absl::StatusOr<std::vector<CompositeModel>> LoadCompositeModels(const std::string& dir);

}  // namespace fpconform::composite

#endif  // FPCONFORM_COMPOSITE_MODEL_H_
