// Replays recorded hardware outputs (conformance/data/*.txt, format in conformance/data/README.md)
// against the accumulation presets on the CPU, bit for bit. Files are written by
// conformance/cuda_probe/probe.cu on a GPU (or converted from a cited public recording); nothing
// here needs a GPU.
//
//  * expect = <preset>: every line must satisfy EvaluateDot(preset, a, b, c).bits == d, except
//    the lines of kKnownDisagreements below (each with its reason); a listed line that agrees is
//    an error too ("stale"), so the list can only shrink by editing it.
//  * expect = record-only: parsed and counted; each preset under `candidates` is evaluated and its
//    agreement count printed (no pass/fail on agreement: which preset applies is unknown).
//
// The parser and the checker are also tested on hand-written samples in conformance/testdata/
// (synthetic, never hardware data), whose expected results are derived by hand in the comments of
// those files from the presets' G and F (accumulation/models/SOURCES.md, "Fasi et al. vectors").
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "accumulation/evaluate.h"
#include "accumulation/model_catalog.h"
#include "cases/replay_file.h"
#include "formats/format_spec.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

// A recorded line that disagrees with its file's preset, accepted with a reason.
struct KnownDisagreement {
  const char* file;  // File name under conformance/data/.
  int line;          // 1-based line number in that file.
  const char* reason;
};

// None: every line of the H200 recordings (2026-12-04) agrees with its preset since the presets
// model overflow to Inf, C added in the cuBLAS epilogue and Hopper's mma.sync FP8 datapath
// (accumulation/models/SOURCES.md, section 1b). A new disagreement is listed here with the
// behaviour the presets lack.
constexpr std::array<KnownDisagreement, 0> kKnownDisagreements{};

struct ReplayReport {
  int lines = 0;
  int agree = 0;
  std::vector<std::string> disagreements;  // New: not in the known list.
  std::vector<std::string> known;          // Listed and still disagreeing.
  std::vector<std::string> stale;          // Listed but agreeing now.
  std::vector<std::pair<std::string, int>> candidate_agree;  // record-only files.
};

absl::Status CheckFormat(const ReplayFile& f, const std::string& key, const FormatSpec* got,
                         const FormatSpec& want, const std::string& preset) {
  if (got == &want) return absl::OkStatus();
  return ReplayError(f.path, f.header_line.at(key), key,
               absl::StrCat("'", std::string(got->name), "' but preset ", preset, " takes '",
                            std::string(want.name), "'"));
}

// Evaluates every line of `f` under `model`; returns the lines that disagree as messages.
absl::StatusOr<std::map<int, std::string>> Disagreements(const ReplayFile& f, const Model& model,
                                                         const std::string& preset) {
  for (const auto& [key, got, want] :
       {std::tuple{"a-format", f.a_format, model.inputs.a},
        std::tuple{"b-format", f.b_format, model.inputs.b},
        std::tuple{"c-format", f.c_format, &model.FinalAccumulatorFormat()},
        std::tuple{"d-format", f.d_format, model.output.format}}) {
    absl::Status s = CheckFormat(f, key, got, *want, preset);
    if (!s.ok()) return s;
  }
  std::map<int, std::string> out;
  EvalOptions opt;
  opt.want_bound = false;
  for (const ReplayLine& l : f.lines) {
    absl::StatusOr<EvalResult> r = EvaluateDot(model, l.a, l.b, l.c, opt);
    if (!r.ok()) {
      return ReplayError(f.path, l.line, "line", absl::StrCat("EvaluateDot: ", r.status().message()));
    }
    if (r->bits != l.d) {
      std::ostringstream msg;
      msg << f.path << ":" << l.line << ": d: recorded 0x" << std::hex << l.d << ", preset "
          << preset << " gives 0x" << r->bits << " (K = " << std::dec << l.a.size() << ")";
      out[l.line] = msg.str();
    }
  }
  return out;
}

absl::StatusOr<ReplayReport> Replay(const ReplayFile& f, const ModelCatalog& catalog,
                                    std::span<const KnownDisagreement> known) {
  ReplayReport rep;
  rep.lines = static_cast<int>(f.lines.size());
  const std::string base = std::filesystem::path(f.path).filename().string();
  if (f.expect == "record-only") {
    for (const std::string& name : f.candidates) {
      const absl::StatusOr<Model>& m = catalog.Find(name);
      if (!m.ok()) {
        return ReplayError(f.path, f.header_line.at("candidates"), "candidates",
                     std::string(m.status().message()));
      }
      absl::StatusOr<std::map<int, std::string>> dis = Disagreements(f, *m, name);
      if (!dis.ok()) return dis.status();
      rep.candidate_agree.emplace_back(name, rep.lines - static_cast<int>(dis->size()));
    }
    return rep;
  }
  if (!f.candidates.empty()) {
    return ReplayError(f.path, f.header_line.at("candidates"), "candidates",
                 "only for expect = record-only");
  }
  const absl::StatusOr<Model>& m = catalog.Find(f.expect);
  if (!m.ok()) {
    return ReplayError(f.path, f.header_line.at("expect"), "expect", std::string(m.status().message()));
  }
  absl::StatusOr<std::map<int, std::string>> dis = Disagreements(f, *m, f.expect);
  if (!dis.ok()) return dis.status();
  std::map<int, const KnownDisagreement*> listed;
  for (const KnownDisagreement& k : known) {
    if (base == k.file) listed[k.line] = &k;
  }
  for (const auto& [line, msg] : *dis) {
    auto it = listed.find(line);
    if (it == listed.end()) {
      rep.disagreements.push_back(msg);
    } else {
      rep.known.push_back(absl::StrCat(msg, " [known: ", it->second->reason, "]"));
    }
  }
  for (const auto& [line, k] : listed) {
    if (!dis->contains(line)) {
      rep.stale.push_back(absl::StrCat(f.path, ":", line,
                                       ": listed as a known disagreement but agrees (or is not a "
                                       "data line); remove it from kKnownDisagreements"));
    }
  }
  rep.agree = rep.lines - static_cast<int>(dis->size());
  return rep;
}

std::vector<std::string> TxtFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".txt") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const ModelCatalog& Catalog() {
  static const ModelCatalog* catalog = new ModelCatalog(FPCONFORM_MODELS_SOURCE_DIR);
  return *catalog;
}

std::string TestData(const std::string& name) {
  return std::string(FPCONFORM_REPLAY_TESTDATA_DIR) + "/" + name;
}

// --- The recorded hardware data. ---------------------------------------------------------------

TEST(ReplayTest, RecordedHardwareData) {
  // FPCONFORM_REPLAY_DATA_DIR in the environment replays another folder (e.g. a fresh $OUT of
  // cuda_probe/run_on_device.sh before its files are copied into conformance/data/).
  const char* env_dir = std::getenv("FPCONFORM_REPLAY_DATA_DIR");
  const std::vector<std::string> files = TxtFiles(env_dir ? env_dir : FPCONFORM_REPLAY_DATA_DIR);
  int total = 0, checked = 0, record_only = 0;
  std::set<std::string> seen;
  for (const std::string& path : files) {
    seen.insert(std::filesystem::path(path).filename().string());
    absl::StatusOr<ReplayFile> f = LoadReplay(path);
    ASSERT_TRUE(f.ok()) << f.status();
    absl::StatusOr<ReplayReport> r = Replay(*f, Catalog(), kKnownDisagreements);
    ASSERT_TRUE(r.ok()) << r.status();
    total += r->lines;
    std::ostringstream summary;
    summary << path << ": " << r->lines << " lines, expect " << f->expect;
    if (f->expect == "record-only") {
      ++record_only;
      for (const auto& [name, n] : r->candidate_agree) {
        summary << "; " << name << " agrees on " << n << "/" << r->lines;
      }
    } else {
      ++checked;
      summary << ": " << r->agree << " agree, " << r->known.size() << " known disagreements";
    }
    std::printf("%s\n", summary.str().c_str());
    for (const std::string& k : r->known) std::printf("  %s\n", k.c_str());
    for (const std::string& d : r->disagreements) ADD_FAILURE() << d;
    for (const std::string& s : r->stale) ADD_FAILURE() << s;
  }
  for (const KnownDisagreement& k : kKnownDisagreements) {
    EXPECT_TRUE(seen.contains(k.file)) << "kKnownDisagreements names missing file " << k.file;
  }
  std::printf("%zu files (%d checked against a preset, %d record-only), %d lines\n", files.size(),
              checked, record_only, total);
  RecordProperty("files", static_cast<int>(files.size()));
  RecordProperty("lines", total);
}

// --- Parser and checker on synthetic samples (conformance/testdata/). -------------------------

// The sample `name` (conformance/testdata/) loaded and replayed against the catalog with no known
// disagreements (either step's error); the loaded file in *file where given.
absl::StatusOr<ReplayReport> ReplaySample(const std::string& name, ReplayFile* file = nullptr) {
  absl::StatusOr<ReplayFile> f = LoadReplay(TestData(name));
  if (!f.ok()) return f.status();
  absl::StatusOr<ReplayReport> r = Replay(*f, Catalog(), {});
  if (file != nullptr) *file = *std::move(f);
  return r;
}

TEST(ReplayParserTest, ParsesSample) {
  absl::StatusOr<ReplayFile> f = LoadReplay(TestData("sample_a100_fp16.txt"));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->expect, "nvidia-a100-fp16");
  EXPECT_EQ(f->header.at("device"), "synthetic (hand-written, not hardware)");
  EXPECT_EQ(f->a_format, &Float16());
  EXPECT_EQ(f->c_format, &Float32());
  ASSERT_EQ(f->lines.size(), 3u);
  // Line 1 of the data: Fasi D1, a = b = (1), c = -(1 - 2^-24).
  EXPECT_EQ(f->lines[0].a, std::vector<uint64_t>{0x3C00});
  EXPECT_EQ(f->lines[0].b, std::vector<uint64_t>{0x3C00});
  EXPECT_EQ(f->lines[0].c, 0xBF7FFFFFu);
  EXPECT_EQ(f->lines[0].d, 0x33800000u);
  EXPECT_EQ(f->lines[1].a.size(), 4u);
  EXPECT_EQ(f->lines[2].b[1], 0x0003u);
}

TEST(ReplayParserTest, SampleAgreesWithItsPreset) {
  absl::StatusOr<ReplayReport> r = ReplaySample("sample_a100_fp16.txt");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->lines, 3);
  EXPECT_EQ(r->agree, 3);
  EXPECT_TRUE(r->disagreements.empty());
}

TEST(ReplayParserTest, DetectsDisagreementAndHonoursKnownList) {
  ReplayFile f;
  absl::StatusOr<ReplayReport> r = ReplaySample("sample_disagree.txt", &f);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->disagreements.size(), 1u);
  EXPECT_NE(r->disagreements[0].find("sample_disagree.txt:12: d: recorded 0x34000000, preset "
                                     "nvidia-a100-fp16 gives 0x33800000"),
            std::string::npos)
      << r->disagreements[0];
  const KnownDisagreement listed[] = {{"sample_disagree.txt", 12, "test"}};
  r = Replay(f, Catalog(), listed);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->disagreements.empty());
  EXPECT_EQ(r->known.size(), 1u);
  EXPECT_TRUE(r->stale.empty());
  const KnownDisagreement stale[] = {{"sample_disagree.txt", 12, "test"},
                                     {"sample_disagree.txt", 14, "agrees"}};
  r = Replay(f, Catalog(), stale);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->stale.size(), 1u);
  EXPECT_NE(r->stale[0].find("sample_disagree.txt:14:"), std::string::npos) << r->stale[0];
}

TEST(ReplayParserTest, RecordOnlyCountsCandidates) {
  absl::StatusOr<ReplayReport> r = ReplaySample("sample_record_only.txt");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->candidate_agree.size(), 2u);
  // D1 with d = 2^-23: V100 (F = 23) gives it, A100 (F = 24) gives 2^-24 (SOURCES.md table).
  EXPECT_EQ(r->candidate_agree[0], std::make_pair(std::string("nvidia-v100-fp16"), 1));
  EXPECT_EQ(r->candidate_agree[1], std::make_pair(std::string("nvidia-a100-fp16"), 0));
}

TEST(ReplayParserTest, ErrorsNameFileLineAndField) {
  const std::string head =
      "# fpconform-replay v1\n"
      "device = x\n"
      "instruction = y\n"
      "a-format = float16\n"
      "b-format = float16\n"
      "c-format = float32\n"
      "d-format = float32\n"
      "expect = nvidia-a100-fp16\n";
  struct Case {
    std::string text, want;
  } cases[] = {
      {"# fpconform-replay v2\n", "t.txt:1: magic:"},
      {head + "1 3c00 3c00 bf7fffff\n", "t.txt:9: line: K = 1 needs 5 fields"},
      {head + "x 3c00 3c00 0 0\n", "t.txt:9: K: expected a decimal count"},
      {head + "0 0 0\n", "t.txt:9: K: must be >= 1"},
      {head + "1 3c00 3g00 0 0\n", "t.txt:9: b[0]: not a hex number"},
      {head + "2 3c00 13c00 3c00 3c00 0 0\n", "t.txt:9: a[1]: 0x13c00 does not fit in float16"},
      {head + "1 3c00 3c00 0 100000000\n", "t.txt:9: d: 0x100000000 does not fit in float32"},
      {head + "colour = red\n", "t.txt:9: colour: unknown header key"},
      {head + "device = z\n", "t.txt:9: device: duplicate header key"},
      {head + "1 3c00 3c00 0 0\nsm = 90\n", "t.txt:10: header: header line after"},
      {head + "layout-check = failed (3/64)\n1 3c00 3c00 0 0\n", "t.txt:9: layout-check:"},
      {"# fpconform-replay v1\ndevice = x\n1 3c00 3c00 0 0\n",
       "t.txt:3: a-format: missing header key"},
      {head + "a-format = float17\n", "t.txt:9: a-format: duplicate"},
      {head, "t.txt:8: data: no data lines"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ReplayFile> f = ParseReplay(c.text, "t.txt");
    ASSERT_FALSE(f.ok()) << c.want;
    EXPECT_NE(f.status().message().find(c.want), std::string_view::npos)
        << f.status().message() << "\n  wanted: " << c.want;
  }
  // An unknown format and a format that does not match the preset.
  std::string bad = head;
  bad.replace(bad.find("a-format = float16"), 18, "a-format = float17");
  absl::StatusOr<ReplayFile> f = ParseReplay(bad + "1 3c00 3c00 0 0\n", "t.txt");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("t.txt:4: a-format: unknown format 'float17'"),
            std::string_view::npos)
      << f.status();
  std::string mismatch = head;
  mismatch.replace(mismatch.find("b-format = float16"), 18, "b-format = bfloat16");
  f = ParseReplay(mismatch + "1 3c00 3c00 0 0\n", "t.txt");
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<ReplayReport> r = Replay(*f, Catalog(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.txt:5: b-format: 'bfloat16' but preset "
                                      "nvidia-a100-fp16 takes 'float16'"),
            std::string_view::npos)
      << r.status();
}

}  // namespace
}  // namespace fpconform
