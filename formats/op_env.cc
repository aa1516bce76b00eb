#include "formats/op_env.h"

#include <array>

namespace fpconform {
namespace {

struct RoundingEntry {
  std::string_view name;
  Rounding rounding;
};
constexpr std::array<RoundingEntry, 6> kRoundingNames = {{
    {"rne", Rounding::kNearestEven},
    {"rna", Rounding::kNearestAway},
    {"rtz", Rounding::kTowardZero},
    {"rup", Rounding::kUpward},
    {"rdn", Rounding::kDownward},
    {"rto", Rounding::kToOdd},
}};

constexpr std::array<std::string_view, 4> kNanProfileNames = {"ieee", "canonical", "cuda",
                                                               "x86"};

}  // namespace

bool ParseRounding(std::string_view text, OpEnv& env) {
  for (const RoundingEntry& r : kRoundingNames) {
    if (text == r.name) {
      env.rounding = r.rounding;
      env.sr_bits = 0;
      return true;
    }
  }
  if (text.size() < 3 || text.size() > 4 || text.substr(0, 2) != "sr") return false;
  int k = 0;
  for (char c : text.substr(2)) {
    if (c < '0' || c > '9') return false;
    k = k * 10 + (c - '0');
  }
  if (text[2] == '0' || k < 1 || k > 32) return false;
  env.rounding = Rounding::kStochastic;
  env.sr_bits = k;
  return true;
}

std::string RoundingName(const OpEnv& env) {
  if (env.rounding == Rounding::kStochastic) return "sr" + std::to_string(env.sr_bits);
  for (const auto& r : kRoundingNames) {
    if (r.rounding == env.rounding) return std::string(r.name);
  }
  return "?";
}

std::optional<NanProfile> ParseNanProfile(std::string_view text) {
  for (size_t i = 0; i < kNanProfileNames.size(); ++i) {
    if (text == kNanProfileNames[i]) return static_cast<NanProfile>(i);
  }
  return std::nullopt;
}

std::string_view NanProfileName(NanProfile p) {
  return kNanProfileNames[static_cast<size_t>(p)];
}

int FlagsToChars(Flags f, char* out) {
  static constexpr char kLetters[] = "vzoux";
  int n = 0;
  for (int i = 0; i < 5; ++i) {
    if (f & (1 << i)) out[n++] = kLetters[i];
  }
  if (n == 0) out[n++] = '-';
  return n;
}

std::string FlagsToString(Flags f) {
  char buf[5];
  int n = FlagsToChars(f, buf);
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace fpconform
