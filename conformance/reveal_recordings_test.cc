// `fpconform reveal --from` on outputs recorded on real devices (conformance/data/reveal/): each
// line of expect.txt names an outputs file of a probe directory and the presets the reveal must
// (name) or must not (!name) list among "presets with this tree and behaviour". The recordings
// are measurements (conformance/data/README.md, "Reveal recordings"), never edited; a preset whose
// tree or behaviour drifts from them fails here.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "accumulation/model_catalog.h"
#include "accumulation/reveal_outputs.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

struct ExpectLine {
  int line = 0;
  std::string dir, outputs;
  std::vector<std::string> named, excluded;
};

std::vector<ExpectLine> ReadExpect(const std::string& path) {
  std::vector<ExpectLine> out;
  std::ifstream in(path);
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.empty() || text[0] == '#') continue;
    std::istringstream words(text);
    ExpectLine e;
    e.line = line;
    words >> e.dir >> e.outputs;
    for (std::string w; words >> w;) {
      if (w[0] == '!') {
        e.excluded.push_back(w.substr(1));
      } else {
        e.named.push_back(w);
      }
    }
    out.push_back(e);
  }
  return out;
}

TEST(RevealRecordings, PresetsNamedForEveryRecording) {
  const std::string root = FPCONFORM_REVEAL_DATA_DIR;
  const std::vector<ExpectLine> lines = ReadExpect(root + "/expect.txt");
  ASSERT_GE(lines.size(), 5u) << root << "/expect.txt";
  const ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  for (const ExpectLine& e : lines) {
    SCOPED_TRACE(testing::Message() << "expect.txt:" << e.line << ": " << e.dir << "/"
                                    << e.outputs);
    ASSERT_FALSE(e.named.empty()) << "a line must name at least one preset";
    const std::string dir = root + "/" + e.dir;
    absl::StatusOr<Revealed> r = RevealFromOutputs(dir, dir + "/" + e.outputs, "", catalog);
    ASSERT_TRUE(r.ok()) << r.status();
    std::vector<std::string> full;
    for (const PresetMatch& m : r->presets) {
      if (m.behaviour) full.push_back(m.name);
    }
    auto listed = [&](const std::string& name) {
      return std::find(full.begin(), full.end(), name) != full.end();
    };
    for (const std::string& name : e.named) {
      EXPECT_TRUE(listed(name)) << name << " is not among the presets with this tree and "
                                << "behaviour:\n" << RevealedText(*r);
    }
    // The draft model (--format toml) declares the revealed tree (split-K slices included).
    const std::string draft = RevealedDraftModel(*r);
    EXPECT_NE(draft.find("equals the revealed tree: yes"), std::string::npos) << draft;
    for (const std::string& name : e.excluded) {
      EXPECT_FALSE(listed(name)) << name << " has this tree and behaviour, but expect.txt says "
                                 << "it must not";
    }
  }
}

}  // namespace
}  // namespace fpconform
