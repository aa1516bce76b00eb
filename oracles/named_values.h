// The name table of an oracle's enum (elementary.cc: ElementaryFn; axis_ops.cc: AxisOp) and the
// two look-ups every such table serves: the name of a value, and the value of a name with an
// InvalidArgument that lists the valid names in the table's order.
//
// Example:
//   constexpr std::array<NamedValue<AxisOp>, 2> kNames = {{{AxisOp::kSoftmax, "softmax"},
//                                                          {AxisOp::kRmsNorm, "rmsnorm"}}};
//   NameIn(kNames, AxisOp::kRmsNorm) == "rmsnorm";
//   ParseNameIn(kNames, "relu", "axis op").status().message() ==
//       "unknown axis op 'relu'; valid: softmax, rmsnorm";
#ifndef FPCONFORM_ORACLES_NAMED_VALUES_H_
#define FPCONFORM_ORACLES_NAMED_VALUES_H_

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fpconform {

template <typename E>
struct NamedValue {
  E value;
  std::string_view name;
};

// The name of `value` in `table`; "?" for a value the table lacks.
template <typename E, size_t N>
std::string_view NameIn(const std::array<NamedValue<E>, N>& table, E value) {
  for (const NamedValue<E>& row : table) {
    if (row.value == value) return row.name;
  }
  return "?";
}

// The value named `name` in `table`; otherwise InvalidArgument "unknown <what> '<name>'; valid:
// <every name, comma-separated>".
template <typename E, size_t N>
absl::StatusOr<E> ParseNameIn(const std::array<NamedValue<E>, N>& table, std::string_view name,
                              std::string_view what) {
  std::string valid;
  for (const NamedValue<E>& row : table) {
    if (row.name == name) return row.value;
    if (!valid.empty()) valid += ", ";
    valid += row.name;
  }
  return absl::InvalidArgumentError("unknown " + std::string(what) + " '" + std::string(name) +
                                    "'; valid: " + valid);
}

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_NAMED_VALUES_H_
