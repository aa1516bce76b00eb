// `fpconform formats`: the format table (formats/format_spec.h) with every derived limit printed
// exactly, and `--values NAME`: every value of an 8-bit format.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/ops.h"
#include "formats/round_pack.h"
#include "formats/text.h"

namespace fpconform::cli {
namespace {

// Left-aligned columns separated by two spaces; no trailing spaces.
class Table {
 public:
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render() const {
    std::vector<size_t> width;
    for (const auto& row : rows_) {
      if (width.size() < row.size()) width.resize(row.size(), 0);
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    std::string out;
    for (const auto& row : rows_) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        line += row[i];
        if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 2, ' ');
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line;
      out += '\n';
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string YesNo(bool b) { return b ? "yes" : "no"; }

bool HasNegativeZero(const FormatSpec& f) {
  return f.has_sign && f.has_zero && f.nan_encoding != NanEncoding::kNegativeZero;
}

// Exact C99 hex-float of an integer: -128 -> "-0x1p+7", 3 -> "0x1.8p+1".
std::string IntegerHexFloat(int64_t v) {
  if (v == 0) return "0x0p+0";
  std::string sign = v < 0 ? "-" : "";
  uint64_t m = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const int e = 63 - std::countl_zero(m);
  uint64_t frac = m - (uint64_t{1} << e);  // The e bits below the leading one.
  std::string digits;
  if (frac != 0) {
    const int nibbles = (e + 3) / 4;
    frac <<= nibbles * 4 - e;  // Left-align to whole hex digits.
    static constexpr char kHex[] = "0123456789abcdef";
    for (int i = nibbles - 1; i >= 0; --i) digits += kHex[(frac >> (4 * i)) & 15];
    while (digits.back() == '0') digits.pop_back();
  }
  return absl::StrCat(sign, "0x1", digits.empty() ? "" : ".", digits, "p+", e);
}

std::string HexFloat(const FormatSpec& f, uint64_t bits) {
  return IsFloat(f) ? ExactHexFloat(f, bits) : IntegerHexFloat(IntegerValue(f, bits));
}

void AddValueRow(Table& t, const FormatSpec& f, std::string_view quantity, uint64_t bits) {
  t.Add({std::string(f.name), std::string(quantity), HexBits(f, bits), FieldBinary(f, bits),
         HexFloat(f, bits), ExactDecimal(f, bits)});
}

std::string FormatNames(bool only_8bit) {
  std::string names;
  for (const FormatSpec& f : AllFormats()) {
    if (only_8bit && f.width != 8) continue;
    if (!names.empty()) names += ' ';
    names += f.name;
  }
  return names;
}

int PrintTable() {
  Table params;
  params.Add({"name", "kind", "width", "exp", "frac", "bias", "p", "emin", "emax", "inf", "nan",
              "subnormals", "-0", "description"});
  for (const FormatSpec& f : AllFormats()) {
    if (IsFloat(f)) {
      params.Add({std::string(f.name), f.has_sign ? "float" : "ufloat", absl::StrCat(f.width),
                  absl::StrCat(f.exponent_bits), absl::StrCat(f.fraction_bits),
                  absl::StrCat(f.bias), absl::StrCat(Precision(f)), absl::StrCat(Emin(f)),
                  absl::StrCat(Emax(f)), YesNo(f.nonfinite == NonFinite::kIeee), std::string(NanEncodingName(f)),
                  YesNo(f.has_subnormals), YesNo(HasNegativeZero(f)), std::string(f.description)});
    } else {
      params.Add({std::string(f.name), f.is_signed ? "int" : "uint", absl::StrCat(f.width), "-",
                  "-", "-", "-", "-", "-", "no", "none", "-", "no", std::string(f.description)});
    }
  }

  Table values;
  values.Add({"name", "quantity", "bits", "binary", "hex-float", "decimal"});
  const OpEnv ieee_env;
  for (const FormatSpec& f : AllFormats()) {
    if (!IsFloat(f)) {
      AddValueRow(values, f, "min", static_cast<uint64_t>(IntegerMin(f)) & WidthMask(f));
      AddValueRow(values, f, "max", static_cast<uint64_t>(IntegerMax(f)) & WidthMask(f));
      continue;
    }
    AddValueRow(values, f, "max_finite", MaxFiniteBits(f));
    AddValueRow(values, f, "min_normal", MinNormalBits(f));
    if (f.has_subnormals) AddValueRow(values, f, "min_subnormal", MinSubnormalBits(f));
    // Epsilon 2^(1-p), the gap above 1: a normal number in every table row.
    const int eps = EpsilonExponent(f);
    if (eps >= Emin(f)) {
      uint64_t biased = static_cast<uint64_t>(eps + f.bias);
      AddValueRow(values, f, "epsilon", (biased << f.fraction_bits) << f.pad_bits);
    }
    if (f.nonfinite == NonFinite::kIeee) AddValueRow(values, f, "inf", InfBits(f));
    values.Add({std::string(f.name), "nan",
                HexBits(f, NanResultBits(f, ieee_env, nullptr, nullptr)),
                FieldBinary(f, NanResultBits(f, ieee_env, nullptr, nullptr)), "nan", "nan"});
  }

  std::string out = params.Render();
  out += "\n";
  out += values.Render();
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitUsage;
}

int PrintValues(std::string_view name) {
  const FormatSpec* f = FindFormat(name);
  if (f == nullptr) {
    std::fprintf(stderr, "fpconform formats: unknown format '%s' (valid: %s)\n",
                 std::string(name).c_str(), FormatNames(false).c_str());
    return kExitUsage;
  }
  if (f->width != 8) {
    std::fprintf(stderr,
                 "fpconform formats: --values lists 8-bit formats only; %s has %d bits "
                 "(8-bit formats: %s)\n",
                 std::string(name).c_str(), f->width, FormatNames(true).c_str());
    return kExitUsage;
  }
  Table t;
  for (uint64_t bits = 0; bits < 256; ++bits) {
    std::string cls = IsFloat(*f) ? std::string(FloatClassName(Classify(*f, bits))) : "integer";
    t.Add({HexBits(*f, bits), FieldBinary(*f, bits), HexFloat(*f, bits), ExactDecimal(*f, bits),
           cls});
  }
  std::string out = t.Render();
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitUsage;
}

}  // namespace

CLI::App* AddFormatsCommand(CLI::App& root, FormatsOptions& options) {
  CLI::App* app = root.add_subcommand(
      "formats", "Print the format table with exact limits, or every value of an 8-bit format.");
  app->add_option("--values", options.values,
                  "List all 256 values of the 8-bit format NAME, one per line: bits, "
                  "field-split binary, exact hex-float, exact decimal, class")
      ->type_name("NAME");
  app->footer(
      "The table gives, per format: kind, container width, exponent and fraction bits, bias,\n"
      "precision p, emin, emax, Inf, NaN encoding, subnormals, -0; then max finite, min normal,\n"
      "min subnormal, epsilon (2^(1-p)), Inf and the default NaN, each as bits, field-split\n"
      "binary, exact hex-float and exact decimal.\n"
      "\n"
      "Examples:\n"
      "  fpconform formats\n"
      "  fpconform formats --values float8_e4m3fn\n"
      "  fpconform formats --values float8_e5m2 | grep Subnormal");
  return app;
}

int RunFormatsCommand(const FormatsOptions& options) {
  if (!options.values.empty()) return PrintValues(options.values);
  return PrintTable();
}

}  // namespace fpconform::cli
