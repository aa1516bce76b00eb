// Strictly parsed integer options of the subcommands (tolerance, merge, reveal).
#ifndef FPCONFORM_CLI_STRICT_NUMBER_H_
#define FPCONFORM_CLI_STRICT_NUMBER_H_

#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "CLI/CLI.hpp"
#include "base/str_cat.h"

namespace fpconform::cli {

// A CLI11 callback that parses a number strictly (ParseDecimal: the whole token, decimal, in
// lo..hi) into `dest`; otherwise a usage error (exit 2) that names the option and the range.
template <typename T, typename Dest>
std::function<void(const std::string&)> StrictNumber(std::string name, T lo, T hi, Dest& dest) {
  return [name = std::move(name), lo, hi, &dest](const std::string& text) {
    const std::optional<T> v = ParseDecimal<T>(text, lo, hi);
    if (!v) {
      throw CLI::ValidationError(name, Cat("'", EscapeText(text, 100), "' is not an integer in ",
                                           lo, "..", hi, " (decimal digits only)"));
    }
    dest = *v;
  };
}

// app's option `name`, parsed by StrictNumber<T> into `dest` (the option, for its type name).
template <typename T, typename Dest>
CLI::Option* AddStrictNumber(CLI::App* app, const std::string& name, T lo, T hi, Dest& dest,
                             const std::string& help) {
  return app->add_option_function<std::string>(name, StrictNumber<T>(name, lo, hi, dest), help);
}

}  // namespace fpconform::cli

#endif  // FPCONFORM_CLI_STRICT_NUMBER_H_
