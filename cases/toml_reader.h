// The one reading layer of the TOML files users give fpconform: model and envelope files
// (accumulation/model.cc, MODEL_FORMAT.md) and sweep files (reports/sweep_spec.cc). Strict typed
// lookups, typed enum choices and one error idiom; each file's reader is one function per table
// built on them.
//
// Errors. Every error is "file:line: key: what": the line of the offending value, or, for a
// required key that is missing, of the table it is missing from; "file: key: what" where there is
// no line (a key or table missing from the top level). `key` is dotted ("adder.group",
// "dtype[0].name"). Key and message are escaped (EscapeText, base/str_cat.h): both may echo
// the file's bytes, and a message never carries control characters.
// The first error sticks: after it every lookup returns nullopt (or nullptr) and records nothing,
// so a table's reader may run its lookups in a row and look at ok() once, where a later check
// needs an earlier value.
//
// Types are strict: an integer key takes a TOML integer only (not true, not 7.0), a number key an
// integer or a float (not a boolean), a boolean key true or false, a string key a string.
//
// Detail (TomlDetail): model files keep the terse messages their tests pin ("must be a string",
// "unknown key"); sweep files also name what was found ("must be a string, got an integer") and,
// for an unknown key, the valid ones.
//
// Example (toml_reader_test.cc runs it):
//   enum class Mode { kFast, kExact };
//   TomlReader r("c.toml");                     // root: "n = 0\nmode = \"fast\"\n", parsed
//   r.CheckKeys(root, "", {"n", "mode"});
//   r.Int(root, "", "n", 1, 64, TomlKey::kRequired);       // nullopt
//   r.Choice<Mode>(root, "", "mode", {{"fast", Mode::kFast}, {"exact", Mode::kExact}});  // nullopt
//   r.status().message() == "c.toml:1: n: must be an integer in 1..64, got 0"
#ifndef FPCONFORM_CASES_TOML_READER_H_
#define FPCONFORM_CASES_TOML_READER_H_

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/str_cat.h"

namespace fpconform {

// Whether a lookup's key must be present (a missing required key is an error).
enum class TomlKey { kOptional, kRequired };

// What a message says besides the key and the rule broken (see the file comment).
enum class TomlDetail { kTerse, kFound };

// A scalar the reader read: its dotted key, its value as TOML text ("\"rne\"", "16", "true") and
// its node (for the line).
struct TomlValue {
  std::string key;
  std::string text;
  const toml::node* node = nullptr;
};

// Reads the tables of one file; the first error sticks.
class TomlReader {
 public:
  explicit TomlReader(std::string_view file, TomlDetail detail = TomlDetail::kTerse)
      : file_(file), detail_(detail) {}

  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }

  // Records "file:line: key: what" (InvalidArgument) unless an error is already recorded. The
  // line is `where`'s; none when `where` is null or has no source position.
  void Fail(const toml::node* where, std::string_view key, std::string_view what);

  // "prefix.key", or "key" when prefix is empty (the top level).
  static std::string Dotted(std::string_view prefix, std::string_view key);

  // Every key of `t` (the table at `prefix`) must be one of `allowed`: else "prefix.k: unknown
  // key" (TomlDetail::kFound adds " (valid: a, b, ...)").
  void CheckKeys(const toml::table& t, std::string_view prefix,
                 std::initializer_list<std::string_view> allowed);

  // Fails "prefix.key: <why>" when `t` has `key` (a key that does not apply to the choices made).
  void Reject(const toml::table& t, std::string_view prefix, std::string_view key,
              std::string_view why);

  // The sub-table `key` of `parent`: nullptr when absent (an error when required: "required
  // table missing") or not a table ("must be a table").
  const toml::table* Table(const toml::table& parent, std::string_view prefix,
                           std::string_view key, TomlKey need);

  // Scalars: nullopt when absent (an error when required: "required key missing"), of another
  // type ("must be a string", "must be true or false"), or out of range ("must be an integer in
  // lo..hi, got 0"; "must be a number in lo..hi"). Each value read is recorded in values().
  std::optional<std::string> String(const toml::table& t, std::string_view prefix,
                                    std::string_view key, TomlKey need = TomlKey::kOptional);
  std::optional<int64_t> Int(const toml::table& t, std::string_view prefix, std::string_view key,
                             int64_t lo, int64_t hi, TomlKey need = TomlKey::kOptional);
  std::optional<double> Number(const toml::table& t, std::string_view prefix,
                               std::string_view key, double lo, double hi,
                               TomlKey need = TomlKey::kOptional);
  std::optional<bool> Bool(const toml::table& t, std::string_view prefix, std::string_view key,
                           TomlKey need = TomlKey::kOptional);

  // An array of distinct strings ("must be an array of strings", "'x' listed twice"); nullopt when
  // absent or on an error. `nodes`, when given, receives each element's node (for its line).
  std::optional<std::vector<std::string>> Strings(const toml::table& t, std::string_view prefix,
                                                  std::string_view key,
                                                  TomlKey need = TomlKey::kOptional,
                                                  std::vector<const toml::node*>* nodes = nullptr);

  // The value of the one of `choices` (name, value) that the string names: nullopt when absent
  // (an error when required) or when it names none of them ("must be one of a b c, got \"x\"").
  // E is named at the call: r.Choice<Mode>(t, "t", "mode", {{"fast", Mode::kFast}, ...}).
  template <typename E>
  std::optional<E> Choice(const toml::table& t, std::string_view prefix, std::string_view key,
                          std::initializer_list<std::pair<std::string_view, E>> choices,
                          TomlKey need = TomlKey::kOptional) {
    const std::optional<std::string> s = String(t, prefix, key, need);
    if (!s) return std::nullopt;
    std::vector<std::string_view> names;
    for (const auto& [name, value] : choices) {
      if (name == *s) return value;
      names.push_back(name);
    }
    Fail(t.get(key), Dotted(prefix, key),
         Cat("must be one of ", Join(names, " "), ", got \"", *s, "\""));
    return std::nullopt;
  }

  // Every scalar read so far, in order (String, Int, Number, Bool, Choice).
  const std::vector<TomlValue>& values() const { return values_; }

 private:
  // ", got <the TOML type of n>" under TomlDetail::kFound, else "".
  std::string Found(const toml::node& n) const;
  // The node of `key` in `t`, or nullptr (failing when it is required and missing).
  const toml::node* Lookup(const toml::table& t, std::string_view prefix, std::string_view key,
                           TomlKey need);
  // Lookup, then read(node, why): the value, or nullopt with `why` set (failing "prefix.key:
  // why"). Each value read is recorded in values() with its TOML text.
  template <typename T, typename Read>
  std::optional<T> Scalar(const toml::table& t, std::string_view prefix, std::string_view key,
                          TomlKey need, Read read);

  std::string file_;
  TomlDetail detail_;
  absl::Status status_;
  std::vector<TomlValue> values_;
};

// The required [provenance] table of a data file whose keys are cited (the composite and attention
// models): one string for each of `keys` (every one required; "provenance.\"k\": required key
// missing"), none for a key outside them ("provenance.k: names no key of this file"), and an
// optional `unconfirmed` list of keys among them. Errors through r (the first one sticks); the
// citations in file order into `provenance`, the list into `unconfirmed`.
void ReadProvenance(TomlReader& r, const toml::table& root, const std::set<std::string>& keys,
                    std::vector<std::pair<std::string, std::string>>& provenance,
                    std::vector<std::string>& unconfirmed);

// Parses `text` as TOML and hands the root table to `parse_table(root, file)` (which returns
// absl::StatusOr<T> and may throw on a toml++ type error): a syntax error becomes
// "file:line: TOML syntax: <toml++'s description>", an exception "file: <what>", both
// InvalidArgument, the description and what() escaped (EscapeText: they may quote the file's
// bytes, control characters included).
template <typename T, typename ParseTable>
absl::StatusOr<T> ParseTomlText(std::string_view text, std::string_view file_name,
                                ParseTable parse_table) {
  const std::string file(file_name);
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(
        Cat(file, ":", e.source().begin.line, ": TOML syntax: ",
            EscapeText(e.description(), 2000)));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat(file, ": ", EscapeText(e.what(), 2000)));
  }
  try {
    return parse_table(root, std::string_view(file));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat(file, ": ", EscapeText(e.what(), 2000)));
  }
}

}  // namespace fpconform

#endif  // FPCONFORM_CASES_TOML_READER_H_
