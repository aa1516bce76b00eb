// The shared TOML reading layer (toml_reader.h): the error idiom, strict types, the first error
// sticking, both detail levels. The file readers built on it have their own tests
// (accumulation/model_test.cc, reports/sweep_spec_test.cc).
#include "cases/toml_reader.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fpconform {
namespace {

enum class Mode { kFast, kExact };

toml::table Parse(std::string_view text) { return toml::parse(text, std::string_view("c.toml")); }

// The header's example.
TEST(TomlReaderTest, HeaderExample) {
  const toml::table root = Parse("n = 0\nmode = \"fast\"\n");
  TomlReader r("c.toml");
  r.CheckKeys(root, "", {"n", "mode"});
  EXPECT_EQ(r.Int(root, "", "n", 1, 64, TomlKey::kRequired), std::nullopt);
  EXPECT_EQ(r.Choice<Mode>(root, "", "mode", {{"fast", Mode::kFast}, {"exact", Mode::kExact}}),
            std::nullopt);  // The first error sticks.
  EXPECT_EQ(r.status().message(), "c.toml:1: n: must be an integer in 1..64, got 0");
  EXPECT_TRUE(r.values().empty());
}

TEST(TomlReaderTest, ReadsTypedValuesAndRecordsThem) {
  const toml::table root =
      Parse("name = \"x\"\n[t]\nn = 7\nf = 3\nb = true\nmode = \"exact\"\nl = [\"a\", \"b\"]\n");
  TomlReader r("c.toml");
  const toml::table* t = r.Table(root, "", "t", TomlKey::kRequired);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(r.String(root, "", "name"), "x");
  EXPECT_EQ(r.Int(*t, "t", "n", 1, 8), 7);
  EXPECT_EQ(r.Number(*t, "t", "f", 1, 8), 3.0);  // An integer is a number.
  EXPECT_EQ(r.Bool(*t, "t", "b"), true);
  EXPECT_EQ(r.Choice<Mode>(*t, "t", "mode", {{"fast", Mode::kFast}, {"exact", Mode::kExact}}),
            Mode::kExact);
  std::vector<const toml::node*> nodes;
  EXPECT_EQ(r.Strings(*t, "t", "l", TomlKey::kOptional, &nodes),
            (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1]->source().begin.line, 7u);
  EXPECT_EQ(r.Int(*t, "t", "absent", 1, 8), std::nullopt);  // Optional and absent: no error.
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> read;
  for (const TomlValue& v : r.values()) read.push_back(v.key + "=" + v.text);
  EXPECT_EQ(read, (std::vector<std::string>{"name=\"x\"", "t.n=7", "t.f=3", "t.b=true",
                                            "t.mode=\"exact\""}));
}

// Each row: a file, a lookup, the whole message at both detail levels.
TEST(TomlReaderTest, MessagesNameFileLineAndKey) {
  struct Row {
    const char* text;
    int lookup;  // 0 String, 1 Int, 2 Number, 3 Bool, 4 Strings, 5 Choice, 6 CheckKeys, 7 Table.
    const char* terse;
    const char* found;
  };
  const Row rows[] = {
      {"[t]\nk = 1\n", 0, "c.toml:2: t.k: must be a string",
       "c.toml:2: t.k: must be a string, got an integer"},
      {"[t]\n", 0, "c.toml:1: t.k: required key missing", "c.toml:1: t.k: required key missing"},
      {"[t]\nk = true\n", 1, "c.toml:2: t.k: must be an integer in 1..8",
       "c.toml:2: t.k: must be an integer in 1..8, got a boolean"},
      {"[t]\nk = 9\n", 1, "c.toml:2: t.k: must be an integer in 1..8, got 9",
       "c.toml:2: t.k: must be an integer in 1..8, got 9"},
      {"[t]\nk = 7.0\n", 1, "c.toml:2: t.k: must be an integer in 1..8",
       "c.toml:2: t.k: must be an integer in 1..8, got a float"},
      {"[t]\nk = true\n", 2, "c.toml:2: t.k: must be a number in 1..8",
       "c.toml:2: t.k: must be a number in 1..8, got a boolean"},
      {"[t]\nk = nan\n", 2, "c.toml:2: t.k: must be a number in 1..8",
       "c.toml:2: t.k: must be a number in 1..8"},
      {"[t]\nk = 1\n", 3, "c.toml:2: t.k: must be true or false",
       "c.toml:2: t.k: must be true or false, got an integer"},
      {"[t]\nk = [\"a\",\n 1]\n", 4, "c.toml:3: t.k: must be an array of strings",
       "c.toml:3: t.k: must be an array of strings, got an integer"},
      {"[t]\nk = [\"a\",\n \"a\"]\n", 4, "c.toml:3: t.k: 'a' listed twice",
       "c.toml:3: t.k: 'a' listed twice"},
      {"[t]\nk = \"slow\"\n", 5, "c.toml:2: t.k: must be one of fast exact, got \"slow\"",
       "c.toml:2: t.k: must be one of fast exact, got \"slow\""},
      {"[t]\nk = 1\nz = 2\n", 6, "c.toml:3: t.z: unknown key",
       "c.toml:3: t.z: unknown key (valid: k)"},
      {"x = 1\n", 7, "c.toml: t: required table missing", "c.toml: t: required table missing"},
      {"t = 1\n", 7, "c.toml:1: t: must be a table",
       "c.toml:1: t: must be a table, got an integer"},
      // User text is escaped.
      {"[t]\nk = \"\\u001b[2J\"\n", 5, "c.toml:2: t.k: must be one of fast exact, got \"\\x1b[2J\"",
       "c.toml:2: t.k: must be one of fast exact, got \"\\x1b[2J\""},
  };
  for (const Row& row : rows) {
    for (const TomlDetail detail : {TomlDetail::kTerse, TomlDetail::kFound}) {
      SCOPED_TRACE(testing::Message() << row.text << " lookup " << row.lookup);
      const toml::table root = Parse(row.text);
      TomlReader r("c.toml", detail);
      const toml::table* t = root.get_as<toml::table>("t");
      const toml::table& tt = t != nullptr ? *t : root;
      switch (row.lookup) {
        case 0: r.String(tt, "t", "k", TomlKey::kRequired); break;
        case 1: r.Int(tt, "t", "k", 1, 8); break;
        case 2: r.Number(tt, "t", "k", 1, 8); break;
        case 3: r.Bool(tt, "t", "k"); break;
        case 4: r.Strings(tt, "t", "k"); break;
        case 5:
          r.Choice<Mode>(tt, "t", "k", {{"fast", Mode::kFast}, {"exact", Mode::kExact}});
          break;
        case 6: r.CheckKeys(tt, "t", {"k"}); break;
        case 7: r.Table(root, "", "t", TomlKey::kRequired); break;
      }
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(r.status().message(), detail == TomlDetail::kTerse ? row.terse : row.found);
    }
  }
}

// A key missing from the top level has no line; Reject names the key that does not apply.
TEST(TomlReaderTest, TopLevelAndReject) {
  const toml::table root = Parse("a = 1\nb = 2\n");
  TomlReader r("c.toml");
  r.String(root, "", "name", TomlKey::kRequired);
  EXPECT_EQ(r.status().message(), "c.toml: name: required key missing");
  TomlReader r2("c.toml");
  r2.Reject(root, "", "c", "never");  // Absent: fine.
  r2.Reject(root, "", "b", "applies only with a = 2");
  EXPECT_EQ(r2.status().message(), "c.toml:2: b: applies only with a = 2");
}

TEST(TomlReaderTest, ParseTomlTextNamesSyntaxErrorsAndExceptions) {
  auto ok = [](const toml::table& root, std::string_view) -> absl::StatusOr<int64_t> {
    return root["n"].value<int64_t>().value_or(-1);
  };
  EXPECT_EQ(*ParseTomlText<int64_t>("n = 3\n", "c.toml", ok), 3);
  const absl::StatusOr<int64_t> syntax = ParseTomlText<int64_t>("\nn = = 3\n", "c.toml", ok);
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(std::string(syntax.status().message()).rfind("c.toml:2: TOML syntax: ", 0), 0u)
      << syntax.status();
  // toml++'s description quotes the file's bytes: escaped (toml_reader_fuzzer found the raw byte).
  const absl::StatusOr<int64_t> raw = ParseTomlText<int64_t>("x = tru\x01\n", "c.toml", ok);
  ASSERT_FALSE(raw.ok());
  const std::string raw_message(raw.status().message());
  EXPECT_EQ(raw_message.find('\x01'), std::string::npos) << raw_message;
  EXPECT_NE(raw_message.find("\\x01"), std::string::npos) << raw_message;
  auto throws = [](const toml::table&, std::string_view) -> absl::StatusOr<int64_t> {
    throw std::runtime_error("boom\x1b");
  };
  EXPECT_EQ(ParseTomlText<int64_t>("n = 3\n", "c.toml", throws).status().message(),
            "c.toml: boom\\x1b");
}

}  // namespace
}  // namespace fpconform
