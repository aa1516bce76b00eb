// `fpconform reveal` from outputs, end to end on black boxes: probes written with WriteProbes,
// outputs computed by every preset (float32 / bfloat16 inputs) through EvaluateDot / EvaluateSum
// and by Debian's real NumPy (np.sum along the last axis, np.matmul) and saved as out.npy,
// then RevealFromOutputs must give the preset's declared tree (and list the preset as a full
// match); errors (shape, NaN, not a tree) have clear messages.
#include "accumulation/reveal_outputs.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "accumulation/model_catalog.h"
#include "accumulation/summation_tree.h"
#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

// The outputs of `m` on the probes, in m's output format.
// With `other` and `split` > 0 (matmul), outputs (i, j) with i, j >= split come from `other`: a
// device whose order depends on the output position.
Tensor RunModel(const Model& m, const ProbeSet& p, const Model* other = nullptr,
                int64_t split = 0) {
  const int k = p.spec.k;
  Tensor out = *MakeTensor(m.output.format->name, p.output_shape);
  EvalOptions eo;
  eo.want_bound = false;
  if (p.spec.op == "matmul") {
    const int64_t r = p.output_shape[0];
    std::vector<uint64_t> a(k), b(k);
    for (int64_t i = 0; i < r; ++i) {
      p.a.CopyBits(i * k, a);
      for (int64_t j = 0; j < r; ++j) {
        for (int t = 0; t < k; ++t) b[t] = p.b.Bits(t * r + j);
        const Model& here = other != nullptr && i >= split && j >= split ? *other : m;
        absl::StatusOr<EvalResult> e = EvaluateDot(here, a, b, 0, eo);
        EXPECT_TRUE(e.ok()) << e.status();
        out.SetBits(i * r + j, e.ok() ? e->bits : 0);
      }
    }
  } else {
    std::vector<uint64_t> x(k);
    for (int64_t i = 0; i < p.output_shape[0]; ++i) {
      p.a.CopyBits(i * k, x);
      absl::StatusOr<EvalResult> e = EvaluateSum(m, x, 0, eo);
      EXPECT_TRUE(e.ok()) << e.status();
      out.SetBits(i, e.ok() ? e->bits : 0);
    }
  }
  return out;
}

absl::StatusOr<Revealed> RevealModel(const Model& m, const std::string& op, int k,
                                     const std::string& dtype, const ModelCatalog& catalog,
                                     Tensor* outputs = nullptr) {
  TempDir tmp("fpconform_reveal");
  const std::string dir = tmp / "probes";
  absl::StatusOr<ProbeSet> p = MakeProbes({op, k, dtype});
  if (!p.ok()) return p.status();
  if (absl::Status s = WriteProbes(*p, dir); !s.ok()) return s;
  Tensor out = RunModel(m, *p);
  if (outputs != nullptr) out = *outputs;
  if (absl::Status s = WriteNpy(out, tmp / "out.npy"); !s.ok()) return s;
  return RevealFromOutputs(dir, tmp / "out.npy", out.dtype, catalog);
}

TEST(RevealOutputs, ProbeLayoutAndSize) {
  absl::StatusOr<ProbeSet> mm = MakeProbes({"matmul", 256, "bfloat16"});
  ASSERT_TRUE(mm.ok()) << mm.status();
  const int64_t p = static_cast<int64_t>(mm->behaviour.size());
  EXPECT_EQ(p, 127);  // 5 calibration + 2 x 60 fraction + 2 rounding probes.
  EXPECT_EQ(mm->a.shape, (std::vector<int64_t>{256 + p, 256}));
  EXPECT_EQ(mm->b.shape, (std::vector<int64_t>{256, 256 + p}));
  EXPECT_EQ(mm->a.Bits(0), 0x4F80u);  // A[0][0] = 2^32 in bfloat16.
  EXPECT_EQ(mm->a.Bits(1), 0x2F80u);  // 2^-32.
  EXPECT_EQ(mm->b.Bits(0), 0xCF80u);  // B[0][0] = -2^32.
  absl::StatusOr<ProbeSet> s = MakeProbes({"sum", 256, "float32"});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->a.shape, (std::vector<int64_t>{256 * 255 / 2 + p, 256}));
  EXPECT_FALSE(MakeProbes({"matmul", 256, "float16"}).ok());
  EXPECT_FALSE(MakeProbes({"conv", 256, "float32"}).ok());
  EXPECT_FALSE(MakeProbes({"sum", 2, "float32"}).ok());
  TempDir tmp("fpconform_reveal");
  EXPECT_TRUE(WriteProbes(*s, tmp / "p").ok());
  EXPECT_TRUE(std::filesystem::exists(tmp / "p/X.npy"));
  EXPECT_EQ(WriteProbes(*s, tmp / "p").code(), absl::StatusCode::kAlreadyExists);
}

// Every preset with float32 or bfloat16 inputs, revealed from its own outputs at K = 40.
TEST(RevealOutputs, EveryPresetFromItsOwnOutputs) {
  const ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  absl::StatusOr<std::vector<ModelFile>> files = catalog.LoadAll();
  ASSERT_TRUE(files.ok());
  int revealed = 0;
  for (const ModelFile& f : *files) {
    if (!f.model.ok()) continue;
    const Model& m = *f.model;
    const std::string dtype(m.inputs.a->name);
    const FormatSpec* fb = m.inputs.b != nullptr ? m.inputs.b : m.inputs.a;
    if ((dtype != "float32" && dtype != "bfloat16") || fb->name != dtype) {
      std::printf("listed: %s (inputs %s: the probes need float32 or bfloat16)\n", f.name.c_str(),
                  dtype.c_str());
      continue;
    }
    const std::string op = m.op_dot ? "matmul" : "sum";
    SCOPED_TRACE(f.name + " " + op);
    absl::StatusOr<Revealed> r = RevealModel(m, op, 40, dtype, catalog);
    if (m.adder.kind == AdderKind::kKahan) {
      // A compensated sum has no declared tree: either no tree explains its outputs, or the
      // one the probes show is reported without claiming the preset.
      if (!r.ok()) {
        EXPECT_TRUE(absl::StrContains(r.status().message(), "not a fixed summation tree"))
            << r.status();
      } else {
        for (const PresetMatch& pm : r->presets) EXPECT_NE(pm.name, f.name);
        std::printf("kahan-f32 (%s): the probes show %s\n", op.c_str(),
                    RenderText(r->tree).substr(0, 120).c_str());
      }
      continue;
    }
    ASSERT_TRUE(r.ok()) << r.status();
    const SumTree declared = *BuildSummationTree(m, 40);
    EXPECT_TRUE(SameCanonicalTree(declared, r->tree))
        << RenderText(r->tree) << "\n" << RenderText(Canonical(declared));
    bool listed = false;
    for (const PresetMatch& pm : r->presets) {
      if (pm.name == f.name) {
        listed = true;
        EXPECT_TRUE(pm.behaviour) << pm.differs;
      }
    }
    EXPECT_TRUE(listed) << RevealedText(*r);
    if (m.adder.kind == AdderKind::kFused) {
      EXPECT_EQ(r->fused_group, m.adder.group);
      EXPECT_EQ(r->fraction_bits, m.adder.fraction_bits) << RevealedText(*r);
    }
    EXPECT_TRUE(absl::StrContains(RevealedDraftModel(*r), "equals the revealed tree: yes"))
        << RevealedDraftModel(*r);
    ++revealed;
  }
  std::printf("revealed %d presets from their outputs\n", revealed);
  EXPECT_GE(revealed, 30);
}

TEST(RevealOutputs, K256) {
  const ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  for (const auto& [name, op] : std::vector<std::pair<std::string, std::string>>{
           {"trainium2-bf16", "matmul"}, {"trainium2-reduce-bf16-pairwise", "sum"}}) {
    const Model& m = *catalog.Find(name);
    absl::StatusOr<Revealed> r = RevealModel(m, op, 256, "bfloat16", catalog);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(SameCanonicalTree(*BuildSummationTree(m, 256), r->tree)) << name;
    std::printf("%s", RevealedText(*r).substr(0, 400).c_str());
    EXPECT_TRUE(absl::StrContains(RevealedDraftModel(*r), "equals the revealed tree: yes"));
  }
}

TEST(RevealOutputs, Errors) {
  const ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  const Model& m = *catalog.Find("cpu-f32-seq");
  absl::StatusOr<ProbeSet> p = MakeProbes({"matmul", 8, "float32"});
  ASSERT_TRUE(p.ok());
  Tensor good = RunModel(m, *p);
  Tensor shape = *MakeTensor("float32", {3, 3});
  absl::StatusOr<Revealed> r = RevealModel(m, "matmul", 8, "float32", catalog, &shape);
  EXPECT_TRUE(absl::StrContains(r.status().message(), "shape [3, 3], expected [135, 135]"))
      << r.status();
  Tensor nan = good;
  nan.SetBits(5, 0x7FC00000);
  r = RevealModel(m, "matmul", 8, "float32", catalog, &nan);
  EXPECT_TRUE(absl::StrContains(r.status().message(), "element (0, 5) is NaN")) << r.status();
  Tensor asym = good;
  asym.SetBits(1, asym.Bits(2));  // Output (0, 1) now differs from (1, 0).
  r = RevealModel(m, "matmul", 8, "float32", catalog, &asym);
  EXPECT_TRUE(absl::StrContains(r.status().message(), "not a fixed summation tree")) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "--tiles 2")) << r.status();
  Tensor ints = *MakeTensor("int32", {135, 135});
  r = RevealModel(m, "matmul", 8, "float32", catalog, &ints);
  EXPECT_TRUE(absl::StrContains(r.status().message(), "must be floating point")) << r.status();
}

// --tiles: every probe block reveals the same tree for a fixed order; a device whose order
// changes in the lower-right block is reported per block (and block (0, 0) stays the answer).
TEST(RevealOutputs, TiledProbesSeeThePosition) {
  const ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  absl::StatusOr<Model> seq = catalog.Find("cpu-f32-seq");
  absl::StatusOr<Model> split = catalog.Find("cuda-f32-splitk4");
  ASSERT_TRUE(seq.ok() && split.ok());
  ProbeSpec spec{"matmul", 24, "float32", 2};
  absl::StatusOr<ProbeSet> p = MakeProbes(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  const int64_t block = (24 + 127 + 127) / 128 * 128;  // K + P padded to 128.
  EXPECT_EQ(p->output_shape, (std::vector<int64_t>{2 * block, 2 * block}));
  EXPECT_TRUE(absl::StrContains(p->manifest, "\"tiles\": 2"));
  for (bool mixed : {false, true}) {
    SCOPED_TRACE(mixed ? "mixed" : "fixed");
    TempDir tmp("fpconform_reveal");
    const std::string dir = tmp / "probes";
    ASSERT_TRUE(WriteProbes(*p, dir).ok());
    Tensor out = RunModel(*seq, *p, mixed ? &*split : nullptr, block);
    ASSERT_TRUE(WriteNpy(out, tmp / "out.npy").ok());
    absl::StatusOr<Revealed> r = RevealFromOutputs(dir, tmp / "out.npy", "", catalog);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->tile_trees.size(), 4u);
    EXPECT_TRUE(SameCanonicalTree(r->tree, *BuildSummationTree(*seq, 24)));
    EXPECT_TRUE(SameCanonicalTree(r->tile_trees[1], r->tree));
    EXPECT_TRUE(SameCanonicalTree(r->tile_trees[2], r->tree));
    EXPECT_EQ(SameCanonicalTree(r->tile_trees[3], r->tree), !mixed);
    if (mixed) {
      EXPECT_TRUE(SameCanonicalTree(r->tile_trees[3], *BuildSummationTree(*split, 24)));
    }
    const std::string text = RevealedText(*r);
    EXPECT_EQ(absl::StrContains(text, "the tree depends on the position: 1 of 4"), mixed) << text;
    EXPECT_EQ(absl::StrContains(text, "the same tree in all 4 probe blocks"), !mixed) << text;
    // Per position: the blocks grouped by tree, each group with its own presets.
    ASSERT_EQ(r->groups.size(), mixed ? 2u : 1u);
    EXPECT_TRUE(r->refused.empty());
    auto full = [](const RevealedGroup& g, const std::string& name) {
      for (const PresetMatch& m : g.presets) {
        if (m.name == name && m.behaviour) return true;
      }
      return false;
    };
    EXPECT_TRUE(full(r->groups[0], "cpu-f32-seq"));
    if (mixed) {
      using Block = std::pair<int64_t, int64_t>;
      EXPECT_EQ(r->groups[0].blocks, (std::vector<Block>{{0, 0}, {0, block}, {block, 0}}));
      EXPECT_EQ(r->groups[1].blocks, (std::vector<Block>{{block, block}}));
      EXPECT_TRUE(full(r->groups[1], "cuda-f32-splitk4")) << text;
      EXPECT_FALSE(full(r->groups[1], "cpu-f32-seq")) << text;
      EXPECT_TRUE(absl::StrContains(text, absl::StrCat("group 1: blocks at (", block, ", ", block,
                                                       "): rows ", block, "..")))
          << text;
      // A block whose outputs no fixed tree explains (a pair that differs from its mirror) is
      // refused alone; the other blocks keep their groups.
      Tensor broken = out;
      const int64_t cols = 2 * block;
      broken.SetBits(block * cols + 1, broken.Bits(block * cols + 2));  // Output (block, 1).
      ASSERT_TRUE(WriteNpy(broken, tmp / "broken.npy").ok());
      r = RevealFromOutputs(dir, tmp / "broken.npy", "", catalog);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->refused.size(), 1u);
      EXPECT_EQ(r->refused[0].first, (Block{block, 0}));
      EXPECT_TRUE(absl::StrContains(r->refused[0].second, "not a fixed summation tree"));
      ASSERT_EQ(r->groups.size(), 2u);
      EXPECT_EQ(r->groups[0].blocks, (std::vector<Block>{{0, 0}, {0, block}}));
      EXPECT_TRUE(absl::StrContains(RevealedText(*r), absl::StrCat("refused: block at (", block,
                                                                   ", 0)")));
      // Every block refused: the reveal fails.
      for (int64_t b0 : {int64_t{0}, block}) {
        for (int64_t b1 : {int64_t{0}, block}) {
          broken.SetBits((b0 + 0) * cols + b1 + 1, broken.Bits((b0 + 0) * cols + b1 + 2));
        }
      }
      ASSERT_TRUE(WriteNpy(broken, tmp / "all_broken.npy").ok());
      r = RevealFromOutputs(dir, tmp / "all_broken.npy", "", catalog);
      EXPECT_TRUE(absl::StrContains(r.status().message(), "no probe block shows a fixed"))
          << r.status();
    }
  }
  EXPECT_FALSE(MakeProbes({"sum", 24, "float32", 2}).ok());
  EXPECT_FALSE(MakeProbes({"matmul", 24, "float32", 5}).ok());
}

// Debian's NumPy as the black box (float32: np.sum along the last axis, np.matmul).
TEST(RevealOutputs, RealNumpy) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no /usr/bin/python3 with numpy";
  }
  const ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  for (const char* op : {"sum", "matmul"}) {
    SCOPED_TRACE(op);
    TempDir tmp("fpconform_reveal");
    const std::string dir = tmp / "probes";
    ASSERT_TRUE(WriteProbes(*MakeProbes({op, 256, "float32"}), dir).ok());
    const std::string py =
        std::string(op) == "sum"
            ? absl::StrCat("import numpy as np; x = np.load('", dir,
                           "/X.npy'); np.save('", tmp / "out.npy", "', np.sum(x, axis=-1))")
            : absl::StrCat("import numpy as np; a = np.load('", dir, "/A.npy'); b = np.load('",
                           dir, "/B.npy'); np.save('", tmp / "out.npy", "', np.matmul(a, b))");
    ASSERT_EQ(std::system(("/usr/bin/python3 -c \"" + py + "\"").c_str()), 0);
    absl::StatusOr<Revealed> r = RevealFromOutputs(dir, tmp / "out.npy", "", catalog);
    ASSERT_TRUE(r.ok()) << r.status();
    const std::string text = RevealedText(*r);
    std::printf("numpy %s:\n%s", op, text.c_str());
    if (std::string(op) == "sum") {
      EXPECT_TRUE(SameCanonicalTree(*BuildSummationTree(*catalog.Find("numpy-sum-f32"), 256),
                                    r->tree));
      ASSERT_FALSE(r->presets.empty());
      EXPECT_EQ(r->presets[0].name, "numpy-sum-f32");
      EXPECT_TRUE(r->presets[0].behaviour);
      EXPECT_EQ(r->fraction_bits, 23);
    } else {
      // Debian's numpy calls the reference BLAS (SOURCES.md §4c): one loop over k per element.
      bool refblas = false;
      for (const auto& p : r->presets) refblas |= p.name == "numpy-refblas-f32" && p.behaviour;
      EXPECT_TRUE(refblas) << text;
    }
    EXPECT_TRUE(absl::StrContains(RevealedDraftModel(*r), "equals the revealed tree: yes"));
  }
}

}  // namespace
}  // namespace fpconform
