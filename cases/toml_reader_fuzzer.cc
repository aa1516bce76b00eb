// libFuzzer harness for cases/toml_reader.h, the reading layer of every TOML file a user gives
// (model, envelope and sweep files): the input bytes are a TOML file, parsed by ParseTomlText,
// then every table of it is read with every typed lookup (String, Int, Number, Bool, Strings,
// Choice, Table, CheckKeys, Reject) under both message details. Checked, for each lookup:
//  * a syntax error, like every reader error, is InvalidArgument whose message starts with the
//    file name and carries no control character (DESIGN.md: errors name the file, line, field);
//  * the first error sticks: once a reader has failed, further lookups return nothing, record
//    no value and leave the status as it was;
//  * a lookup that returns a value records exactly one value whose key is the dotted key, and the
//    value is the node's own (an Int is the integer, in range; a Choice one of the choices).
// Never a crash, a throw or an abort.
//
//   build-fuzz/cases/toml_reader_fuzzer cases/testdata/fuzz/toml_reader
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "absl/status/status.h"
#include "cases/toml_reader.h"

namespace fpconform {
namespace {

constexpr std::string_view kFile = "fuzz.toml";

[[noreturn]] void Fail(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "toml_reader_fuzzer: %.*s: %.*s\n", static_cast<int>(what.size()),
               what.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void CheckError(const absl::Status& s) {
  if (s.ok()) return;
  const std::string_view m(s.message().data(), s.message().size());
  if (s.code() != absl::StatusCode::kInvalidArgument) Fail("not InvalidArgument", m);
  if (!m.starts_with(kFile)) Fail("message does not name the file", m);
  for (const char c : m) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) Fail("control character in", m);
  }
}

enum class Pick { kA, kB, kC };

// One lookup of each kind on `key` of `t`; `depth` bounds the recursion into sub-tables.
void ReadTable(TomlReader& r, const toml::table& t, const std::string& prefix, int depth) {
  for (const auto& [k, node] : t) {
    const std::string key(k.str());
    const std::string dotted = TomlReader::Dotted(prefix, key);
    for (int kind = 0; kind < 8; ++kind) {
      const bool was_ok = r.ok();
      const absl::Status before = r.status();
      const size_t values_before = r.values().size();
      bool got = false;
      switch (kind) {
        case 0: got = r.String(t, prefix, key).has_value(); break;
        case 1: {
          const std::optional<int64_t> v = r.Int(t, prefix, key, -5, 1000);
          if (v && (*v < -5 || *v > 1000 || node.value<int64_t>() != *v)) Fail("Int", dotted);
          got = v.has_value();
          break;
        }
        case 2: got = r.Number(t, prefix, key, -1e9, 1e9).has_value(); break;
        case 3: {
          const std::optional<bool> v = r.Bool(t, prefix, key);
          if (v && node.value<bool>() != *v) Fail("Bool", dotted);
          got = v.has_value();
          break;
        }
        case 4: got = r.Strings(t, prefix, key).has_value(); break;
        case 5: {
          const std::optional<Pick> v =
              r.Choice<Pick>(t, prefix, key, {{"a", Pick::kA}, {"b", Pick::kB}, {"c", Pick::kC}});
          if (v && node.value<std::string>() != std::string("abc").substr(static_cast<size_t>(*v), 1)) {
            Fail("Choice", dotted);
          }
          got = v.has_value();
          break;
        }
        case 6: {
          const toml::table* sub = r.Table(t, prefix, key, TomlKey::kOptional);
          if (sub != nullptr && depth < 4) ReadTable(r, *sub, dotted, depth + 1);
          break;
        }
        default: r.Reject(t, prefix, key, "not here"); break;
      }
      CheckError(r.status());
      if (!was_ok) {
        if (got || r.status() != before || r.values().size() != values_before) {
          Fail("a failed reader went on reading", dotted);
        }
      } else if (got && kind != 4) {
        if (r.values().size() != values_before + 1 || r.values().back().key != dotted) {
          Fail("value not recorded under its key", dotted);
        }
      }
      if (!r.ok()) return;  // Sticky from here on; the loop above checked one more lookup.
    }
  }
  r.CheckKeys(t, prefix, {"name", "kind", "n", "x", "on", "list", "table"});
  CheckError(r.status());
  // A missing required key fails.
  if (r.ok() && !t.contains("fuzz_absent_key")) {
    r.String(t, prefix, "fuzz_absent_key", TomlKey::kRequired);
    CheckError(r.status());
    if (r.ok()) Fail("a missing required key passed", prefix);
  }
}

}  // namespace
}  // namespace fpconform

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fpconform;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const TomlDetail detail : {TomlDetail::kTerse, TomlDetail::kFound}) {
    const absl::StatusOr<int> r = ParseTomlText<int>(
        text, kFile, [detail](const toml::table& root, std::string_view file) -> absl::StatusOr<int> {
          TomlReader reader(file, detail);
          ReadTable(reader, root, "", 0);
          if (!reader.ok()) return reader.status();
          return 0;
        });
    CheckError(r.status());
  }
  return 0;
}
