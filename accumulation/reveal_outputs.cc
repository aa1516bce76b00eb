#include "accumulation/reveal_outputs.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "accumulation/summation_tree.h"
#include "base/hash.h"
#include "base/output_file.h"
#include "base/user_file.h"
#include "formats/format_spec.h"
#include "formats/ops.h"
#include "nlohmann/json.hpp"

namespace fpconform {
namespace {

constexpr double kM0 = 0x1p32, kU0 = 0x1p-32;
constexpr int kFracMax = 60;

// The outputs file is read a second time, whole, for its provenance hash: probe outputs are a
// few MB at most (K up to a few thousand), so this bound only stops a runaway file.
constexpr uint64_t kMaxOutputsFileBytes = uint64_t{1} << 30;

int64_t PairCount(int k) { return int64_t{k} * (k - 1) / 2; }

// Rows of A (and columns of B) per probe block: K + P, padded to a multiple of 128 when the block
// is repeated (ProbeSpec::tiles).
int64_t ProbeBlock(const ProbeSpec& spec, int np) {
  const int64_t r = spec.k + np;
  return spec.tiles > 1 ? (r + 127) / 128 * 128 : r;
}
// Row of the pair (i, j), i < j, in the sum layout (lexicographic).
int64_t PairRow(int k, int i, int j) {
  return int64_t{i} * k - int64_t{i} * (i + 1) / 2 + (j - i - 1);
}

std::vector<BehaviourProbe> Behaviour(const ProbeSpec& s, double big, double unit) {
  const int k = s.k;
  const bool mm = s.op == "matmul";
  std::vector<BehaviourProbe> out;
  auto add = [&](std::string name) -> BehaviourProbe& {
    out.push_back({std::move(name), std::vector<double>(k, 0.0), std::vector<double>(k, 1.0)});
    return out.back();
  };
  // Calibration: units everywhere, then +-M at term 0 and K-1.
  auto units = [&](BehaviourProbe& p) {
    for (int t = 0; t < k; ++t) {
      p.a[t] = mm ? kU0 : unit;
      p.b[t] = mm ? kU0 : 1.0;
    }
  };
  units(add("cal_units"));
  for (int pos : {0, k - 1}) {
    for (int sign : {1, -1}) {
      BehaviourProbe& p = add(absl::StrCat("cal_", sign > 0 ? "plus" : "minus", "_",
                                           pos == 0 ? "first" : "last"));
      units(p);
      if (mm) {
        p.a[pos] = kM0;
        p.b[pos] = sign * kU0;
      } else {
        p.a[pos] = sign * big;
      }
    }
  }
  for (int sign : {1, -1}) {
    for (int e = 1; e <= kFracMax; ++e) {
      BehaviourProbe& p = add(absl::StrCat(sign > 0 ? "frac_plus_" : "frac_minus_", e));
      std::fill(p.b.begin(), p.b.end(), 0.0);
      p.a[0] = 1;
      p.a[1] = sign * std::ldexp(1.0, -e);
      p.a[2] = -1;
      p.b[0] = p.b[1] = p.b[2] = 1;
    }
  }
  for (int sign : {1, -1}) {
    BehaviourProbe& p = add(sign > 0 ? "round_pos" : "round_neg");
    std::fill(p.b.begin(), p.b.end(), 0.0);
    p.a[0] = sign * 2.0;
    p.a[1] = sign * (0x1p-23 + 0x1p-24);
    p.b[0] = p.b[1] = 1;
  }
  return out;
}

// The canonical tree as a chain.shape S-expression over the term indices.
std::string Shape(const SumTree& t) {
  std::string out;
  std::vector<std::pair<int, size_t>> stack = {{t.root, 0}};
  while (!stack.empty()) {
    auto& [v, k] = stack.back();
    const SumTree::Node& node = t.nodes[v];
    if (node.kind == SumTree::Kind::kTerm) {
      absl::StrAppend(&out, node.term);
      stack.pop_back();
      continue;
    }
    if (k == 0) out += "(";
    if (k < node.children.size()) {
      if (k > 0) out += " ";
      const int c = node.children[k];
      ++k;
      stack.emplace_back(c, 0);
    } else {
      out += ")";
      stack.pop_back();
    }
  }
  return out;
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

absl::StatusOr<ProbeSet> MakeProbes(const ProbeSpec& spec) {
  if (spec.op != "matmul" && spec.op != "sum") {
    return absl::InvalidArgumentError(
        absl::StrCat("--op must be matmul or sum, got '", spec.op, "'"));
  }
  if (spec.dtype != "float32" && spec.dtype != "bfloat16") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dtype must be float32 or bfloat16, got '", spec.dtype,
        "' (the probes need M / u = 2^64 with both normal in the input format)"));
  }
  if (spec.k < 3 || spec.k > 1024) {
    return absl::InvalidArgumentError(absl::StrCat("--k must be in 3..1024, got ", spec.k));
  }
  if (spec.tiles < 1 || spec.tiles > 4) {
    return absl::InvalidArgumentError(absl::StrCat("--tiles must be in 1..4, got ", spec.tiles));
  }
  if (spec.tiles > 1 && spec.op != "matmul") {
    return absl::InvalidArgumentError("--tiles applies only to --op matmul");
  }
  const FormatSpec& f = *FindFormat(spec.dtype);
  ProbeSet p;
  p.spec = spec;
  const bool mm = spec.op == "matmul";
  p.big = mm ? kM0 * kU0 : kM0;
  p.unit = mm ? kU0 * kU0 : kU0;
  p.behaviour = Behaviour(spec, p.big, p.unit);
  const int k = spec.k;
  const int np = static_cast<int>(p.behaviour.size());
  nlohmann::ordered_json probes = nlohmann::ordered_json::array();
  if (mm) {
    const int64_t block = ProbeBlock(spec, np);
    const int64_t r = block * spec.tiles;
    absl::StatusOr<Tensor> a = MakeTensor(spec.dtype, {r, k});
    absl::StatusOr<Tensor> b = MakeTensor(spec.dtype, {k, r});
    if (!a.ok()) return a.status();
    if (!b.ok()) return b.status();
    const uint64_t m0 = DoubleToBits(f, kM0), mm0 = DoubleToBits(f, -kM0), u0 = DoubleToBits(f, kU0);
    for (int tile = 0; tile < spec.tiles; ++tile) {
      const int64_t o = tile * block;  // Rows of A / columns of B of this copy.
      for (int m = 0; m < k; ++m) {
        for (int t = 0; t < k; ++t) {
          a->SetBits((o + m) * k + t, t == m ? m0 : u0);
          b->SetBits(int64_t{t} * r + o + m, t == m ? mm0 : u0);
        }
      }
      for (int q = 0; q < np; ++q) {
        for (int t = 0; t < k; ++t) {
          a->SetBits((o + k + q) * k + t, DoubleToBits(f, p.behaviour[q].a[t]));
          b->SetBits(int64_t{t} * r + o + k + q, DoubleToBits(f, p.behaviour[q].b[t]));
        }
        if (tile == 0) {
          probes.push_back({{"name", p.behaviour[q].name}, {"row", k + q}, {"col", k + q}});
        }
      }
    }
    p.a = *std::move(a);
    p.b = *std::move(b);
    p.output_shape = {r, r};
  } else {
    const int64_t rows = PairCount(k) + np;
    absl::StatusOr<Tensor> x = MakeTensor(spec.dtype, {rows, k});
    if (!x.ok()) return x.status();
    const uint64_t u = DoubleToBits(f, p.unit), pm = DoubleToBits(f, p.big), mm_ = DoubleToBits(f, -p.big);
    int64_t row = 0;
    for (int i = 0; i < k; ++i) {
      for (int j = i + 1; j < k; ++j, ++row) {
        for (int t = 0; t < k; ++t) x->SetBits(row * k + t, t == i ? pm : t == j ? mm_ : u);
      }
    }
    for (int q = 0; q < np; ++q, ++row) {
      for (int t = 0; t < k; ++t) x->SetBits(row * k + t, DoubleToBits(f, p.behaviour[q].a[t]));
      probes.push_back({{"name", p.behaviour[q].name}, {"row", row}});
    }
    p.a = *std::move(x);
    p.output_shape = {rows};
  }
  nlohmann::ordered_json j;
  j["fpconform_reveal_probes"] = 1;
  j["op"] = spec.op;
  j["k"] = k;
  j["dtype"] = spec.dtype;
  if (spec.tiles > 1) {
    j["tiles"] = spec.tiles;
    j["block"] = ProbeBlock(spec, static_cast<int>(p.behaviour.size()));
  }
  j["big"] = p.big;
  j["unit"] = p.unit;
  if (mm) {
    j["inputs"] = {{"A.npy", p.a.shape}, {"B.npy", p.b.shape}};
    j["computation"] = "out = A @ B (float accumulation of your kernel), saved as out.npy";
    j["pairs"] = spec.tiles > 1
                     ? "output (s*block + m, t*block + n), m != n < k, s, t < tiles: FPRev "
                       "probe with +big at term m, -big at term n (rows k + P .. block - 1 of "
                       "each block are zero)"
                     : "output (m, n), m != n < k: FPRev probe with +big at term m, -big at "
                       "term n";
  } else {
    j["inputs"] = {{"X.npy", p.a.shape}};
    j["computation"] = "out = X.sum(axis=-1) (your kernel's reduction), saved as out.npy";
    j["pairs"] = "row r < k(k-1)/2: the pair (i, j), i < j, in lexicographic order: +big at i, "
                 "-big at j";
  }
  j["output_shape"] = p.output_shape;
  j["probes"] = probes;
  p.manifest = j.dump(1) + "\n";
  return p;
}

absl::Status WriteProbes(const ProbeSet& p, const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    return absl::AlreadyExistsError(absl::StrCat(dir, ": exists (give a new directory)"));
  }
  if (!std::filesystem::create_directories(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": cannot create: ", ec.message()));
  }
  auto fail = [&](absl::Status s) {
    std::filesystem::remove_all(dir, ec);
    return s;
  };
  const bool mm = p.spec.op == "matmul";
  if (absl::Status s = WriteNpy(p.a, dir + (mm ? "/A.npy" : "/X.npy")); !s.ok()) return fail(s);
  if (mm) {
    if (absl::Status s = WriteNpy(p.b, dir + "/B.npy"); !s.ok()) return fail(s);
  }
  // The manifest last, whole or not at all: RevealFromOutputs reads a directory by it.
  if (absl::Status s = WriteFileAtomically(dir + "/manifest.json", {p.manifest}); !s.ok()) {
    return fail(s);
  }
  return absl::OkStatus();
}

absl::StatusOr<Revealed> RevealFromOutputs(const std::string& dir, const std::string& outputs,
                                           const std::string& outputs_dtype,
                                           const ModelCatalog& catalog) {
  const std::string mpath = dir + "/manifest.json";
  absl::StatusOr<std::string> mtext = ReadUserFile(mpath, kMaxTextFileBytes, "probe manifest");
  if (!mtext.ok()) return mtext.status();
  ProbeSpec spec;
  try {
    const nlohmann::json j = nlohmann::json::parse(*mtext);
    if (!j.contains("fpconform_reveal_probes")) {
      return absl::InvalidArgumentError(
          absl::StrCat(mpath, ": not a probe manifest (no fpconform_reveal_probes key)"));
    }
    spec.op = j.at("op").get<std::string>();
    spec.k = j.at("k").get<int>();
    spec.dtype = j.at("dtype").get<std::string>();
    if (j.contains("tiles")) spec.tiles = j.at("tiles").get<int>();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(mpath, ": ", e.what()));
  }
  absl::StatusOr<ProbeSet> probes = MakeProbes(spec);
  if (!probes.ok()) return absl::InvalidArgumentError(
      absl::StrCat(mpath, ": ", probes.status().message()));
  if (probes->manifest != *mtext) {
    return absl::InvalidArgumentError(absl::StrCat(
        mpath, ": does not match the probes this fpconform makes for op ", spec.op, ", k ",
        spec.k, ", dtype ", spec.dtype, " (edited, or written by another version)"));
  }
  Revealed r;
  r.probes = *std::move(probes);
  r.outputs_source = outputs;
  TensorReadOptions ro;
  ro.dtype = outputs_dtype;
  ro.option_name = "--outputs-dtype";
  absl::StatusOr<Tensor> out = ReadTensor(outputs, ro);
  if (!out.ok()) return out.status();
  if (out->format == nullptr || out->format->kind != FormatKind::kFloat) {
    return absl::InvalidArgumentError(absl::StrCat(
        outputs, ": dtype ", out->dtype, ": the outputs must be floating point (the kernel's "
        "result as float32, bfloat16, ...)"));
  }
  r.outputs_dtype = out->dtype;
  {
    const std::string path = outputs.substr(0, outputs.find(':') == std::string::npos
                                                   ? outputs.size()
                                                   : outputs.find(':'));
    absl::StatusOr<std::string> bytes = ReadUserFile(std::filesystem::exists(outputs) ? outputs : path,
                                                     kMaxOutputsFileBytes, "outputs file");
    r.outputs_hash = bytes.ok() ? HexHash(Fnv1a(*bytes)) : "?";
  }
  const ProbeSet& p = r.probes;
  const int k = spec.k;
  const bool mm = spec.op == "matmul";
  std::vector<int64_t> shape = out->shape;
  if (!mm && shape.size() == 2 && shape[1] == 1) shape.pop_back();
  if (shape != p.output_shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        outputs, ": shape [", absl::StrJoin(out->shape, ", "), "], expected [",
        absl::StrJoin(p.output_shape, ", "), "]", mm ? " (A @ B)" : " (X summed along its last axis)"));
  }
  std::vector<double> v(static_cast<size_t>(out->size()));
  const int64_t cols = mm ? p.output_shape[1] : 1;
  for (int64_t i = 0; i < out->size(); ++i) {
    v[static_cast<size_t>(i)] = ToDouble(*out->format, out->Bits(i));
    if (std::isnan(v[static_cast<size_t>(i)])) {
      return absl::InvalidArgumentError(absl::StrCat(
          outputs, ": element ", mm ? absl::StrCat("(", i / cols, ", ", i % cols, ")")
                                    : absl::StrCat(i), " is NaN: the probes are finite and "
          "their sums stay in range, so the kernel did not compute the probe (wrong inputs?)"));
    }
  }
  // Block (row0, col0) of a tiled matmul probe (offsets in rows/columns); (0, 0) otherwise.
  auto pair_value = [&](int64_t row0, int64_t col0, int i, int j) {  // i < j.
    return mm ? v[static_cast<size_t>((row0 + i) * cols + col0 + j)]
              : v[static_cast<size_t>(PairRow(k, i, j))];
  };
  auto behaviour_at = [&](int64_t row0, int64_t col0, size_t q) {
    return mm ? v[static_cast<size_t>((row0 + k + static_cast<int64_t>(q)) * cols + col0 + k +
                                      static_cast<int64_t>(q))]
              : v[static_cast<size_t>(PairCount(k) + static_cast<int64_t>(q))];
  };
  auto find_behaviour = [&](std::string_view name) -> size_t {
    for (size_t q = 0; q < p.behaviour.size(); ++q) {
      if (p.behaviour[q].name == name) return q;
    }
    return p.behaviour.size();
  };
  auto where = [&](int64_t row0, int64_t col0) {
    return spec.tiles > 1 ? absl::StrCat(" in the probe block at output (", row0, ", ", col0, ")")
                          : std::string();
  };
  // With one probe block a tree that depends on the output position cannot be told apart.
  const std::string tiles_hint =
      mm && spec.tiles == 1
          ? "; if the order depends on the output position (a BLAS's edge and interior tiles), "
            "make the probes with --tiles 2 (up to 4): each repeated block is revealed on its "
            "own and the blocks are grouped by tree"
          : "";
  auto reveal_block = [&](int64_t row0, int64_t col0,
                          FprevStats* stats) -> absl::StatusOr<SumTree> {
    if (mm) {
      for (int i = 0; i < k; ++i) {
        for (int j = i + 1; j < k; ++j) {
          const double a = v[static_cast<size_t>((row0 + i) * cols + col0 + j)];
          const double b = v[static_cast<size_t>((row0 + j) * cols + col0 + i)];
          if (a != b) {
            return absl::FailedPreconditionError(absl::StrCat(
                "not a fixed summation tree: non-deterministic or data-dependent order? The "
                "pair (", i, ", ", j, ") gave ", a, " at output (", row0 + i, ", ", col0 + j,
                ") and ", b, " at output (", row0 + j, ", ", col0 + i, ") (the same probe with the "
                "signs swapped; a tree that depends on the output position also gives this)",
                tiles_hint));
          }
        }
      }
    }
    SumOracle oracle = [&](std::span<const double> x) -> absl::StatusOr<double> {
      std::vector<int> plus, minus;
      for (int t = 0; t < k; ++t) {
        if (x[t] == p.big) plus.push_back(t);
        if (x[t] == -p.big) minus.push_back(t);
      }
      std::string name;
      if (plus.empty() && minus.empty()) name = "cal_units";
      if (plus.size() + minus.size() == 1) {
        const int pos = plus.empty() ? minus[0] : plus[0];
        if (pos == 0 || pos == k - 1) {
          name = absl::StrCat("cal_", plus.empty() ? "minus" : "plus", "_",
                              pos == 0 ? "first" : "last");
        }
      }
      if (!name.empty()) return behaviour_at(row0, col0, find_behaviour(name));
      if (plus.size() == 1 && minus.size() == 1 && plus[0] < minus[0]) {
        return pair_value(row0, col0, plus[0], minus[0]);
      }
      return absl::InternalError("reveal: the probe asked for is not in the table");
    };
    FprevOptions fo;
    fo.big = p.big;
    fo.unit = p.unit;
    absl::StatusOr<SumTree> tree = RevealSumTree(oracle, k, fo, stats);
    if (!tree.ok()) {
      if (tree.status().code() == absl::StatusCode::kFailedPrecondition) {
        return absl::FailedPreconditionError(absl::StrCat(
            "not a fixed summation tree", where(row0, col0),
            ": non-deterministic or data-dependent order? (", tree.status().message(), ")",
            tiles_hint));
      }
      return tree.status();
    }
    return tree;
  };
  // The behaviour and the matching presets of a revealed tree, read at the probe block
  // (row0, col0) (every block has its own behaviour probes).
  auto analyse = [&](int64_t row0, int64_t col0, const SumTree& tree, RevealedGroup& g) {
    g.tree = tree;
    g.fused_group = FusedGroupSize(g.tree);
    // Where x0, x1 and x2 meet.
    std::vector<int> parent(g.tree.nodes.size(), -1), leaf(k, -1);
    for (size_t v2 = 0; v2 < g.tree.nodes.size(); ++v2) {
      for (int c : g.tree.nodes[v2].children) {
        parent[static_cast<size_t>(c)] = static_cast<int>(v2);
      }
      if (g.tree.nodes[v2].kind == SumTree::Kind::kTerm) {
        leaf[g.tree.nodes[v2].term] = static_cast<int>(v2);
      }
    }
    auto lca = [&](int a, int b) {
      std::set<int> up;
      for (int x = b; x >= 0; x = parent[static_cast<size_t>(x)]) up.insert(x);
      for (int x = a; x >= 0; x = parent[static_cast<size_t>(x)]) {
        if (up.count(x)) return x;
      }
      return -1;
    };
    const int n01 = lca(leaf[0], leaf[1]);
    const int n012 = lca(n01, leaf[2]);
    const size_t kids = g.tree.nodes[static_cast<size_t>(n01)].children.size();
    if (n01 == n012 && kids > 2) g.fraction_where = "fused group";
    if (n01 != n012 && kids == 2) g.fraction_where = "first add";
    if (!g.fraction_where.empty()) {
      int bits = 0;
      for (int e = 1; e <= kFracMax; ++e) {
        const size_t q = find_behaviour(absl::StrCat("frac_plus_", e));
        if (behaviour_at(row0, col0, q) != std::ldexp(1.0, -e)) {
          break;
        }
        bits = e;
      }
      g.fraction_bits = bits;
      if (g.fraction_where == "fused group" && bits < kFracMax) {
        const double m =
            behaviour_at(row0, col0, find_behaviour(absl::StrCat("frac_minus_", bits + 1)));
        g.alignment = m == 0 ? "truncate" : m < 0 ? "round_down" : "";
      }
    }
    const double rp = behaviour_at(row0, col0, find_behaviour("round_pos"));
    const double rn = behaviour_at(row0, col0, find_behaviour("round_neg"));
    if (rp == 2 && rn == -2) {
      g.output_rounding = "toward zero";
    } else if (rp == 2 + 0x1p-22 && rn == -(2 + 0x1p-22)) {
      g.output_rounding = "to nearest";
    } else {
      g.output_rounding = absl::StrCat("unknown (2 + 1.5 * 2^-23 gave ", rp, ", its negation ", rn,
                                       ")");
    }

    // Presets.
    absl::StatusOr<std::vector<ModelFile>> files = catalog.LoadAll();
    if (files.ok()) {
      for (const ModelFile& file : *files) {
        if (!file.model.ok()) continue;
        const Model& m = *file.model;
        if (!m.Supports(mm ? ModelOp::kMatmul : ModelOp::kSum)) continue;
        const FormatSpec* fb = m.inputs.b != nullptr ? m.inputs.b : m.inputs.a;
        if (m.inputs.a->name != spec.dtype || (mm && fb->name != spec.dtype)) continue;
        absl::StatusOr<SumTree> declared = BuildSummationTree(m, k);
        if (!declared.ok() || !SameCanonicalTree(*declared, g.tree)) continue;
        PresetMatch match{file.name, true, true, ""};
        EvalOptions eo;
        eo.want_bound = false;
        for (size_t q = 0; q < p.behaviour.size() && match.behaviour; ++q) {
          std::vector<uint64_t> a(k), b(k);
          for (int t = 0; t < k; ++t) {
            a[t] = DoubleToBits(*m.inputs.a, p.behaviour[q].a[t] * (mm ? 1.0 : p.behaviour[q].b[t]));
            b[t] = DoubleToBits(*fb, p.behaviour[q].b[t]);
          }
          absl::StatusOr<EvalResult> e =
              mm ? EvaluateDot(m, a, b, 0, eo) : EvaluateSum(m, a, 0, eo);
          if (!e.ok()) {
            match.behaviour = false;
            match.differs = std::string(e.status().message());
            break;
          }
          const double got = ToDouble(*m.output.format, e->bits);
          if (got != behaviour_at(row0, col0, q)) {
            match.behaviour = false;
            match.differs = absl::StrCat(p.behaviour[q].name, ": preset ", got, ", observed ",
                                         behaviour_at(row0, col0, q));
          }
        }
        g.presets.push_back(std::move(match));
      }
    }
    std::stable_sort(g.presets.begin(), g.presets.end(),
                     [](const PresetMatch& a, const PresetMatch& b) {
                       return a.behaviour && !b.behaviour;
                     });
  };
  FprevStats stats;
  if (spec.tiles == 1) {
    absl::StatusOr<SumTree> tree = reveal_block(0, 0, &stats);
    if (!tree.ok()) return tree.status();
    RevealedGroup g;
    g.blocks = {{0, 0}};
    analyse(0, 0, *tree, g);
    r.groups.push_back(std::move(g));
  } else {
    // Per position: every probe block revealed on its own, the blocks grouped by their tree; a
    // block that no fixed tree explains is refused alone.
    r.block = ProbeBlock(spec, static_cast<int>(p.behaviour.size()));
    for (int s = 0; s < spec.tiles; ++s) {
      for (int t = 0; t < spec.tiles; ++t) {
        const int64_t row0 = s * r.block, col0 = t * r.block;
        FprevStats more;
        absl::StatusOr<SumTree> tree = reveal_block(row0, col0, &more);
        stats.probes += more.probes;
        if (!tree.ok()) {
          if (tree.status().code() != absl::StatusCode::kFailedPrecondition) return tree.status();
          r.refused.push_back({{row0, col0}, std::string(tree.status().message())});
          r.tile_trees.push_back(SumTree{});
          continue;
        }
        r.tile_trees.push_back(*tree);
        auto same = std::find_if(r.groups.begin(), r.groups.end(), [&](const RevealedGroup& g) {
          return SameCanonicalTree(g.tree, *tree);
        });
        if (same != r.groups.end()) {
          same->blocks.push_back({row0, col0});
          continue;
        }
        RevealedGroup g;
        g.blocks = {{row0, col0}};
        analyse(row0, col0, *tree, g);
        r.groups.push_back(std::move(g));
      }
    }
    if (r.groups.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "no probe block shows a fixed summation tree (", r.refused.size(), " blocks); the "
          "first: ", r.refused[0].second));
    }
  }
  // The answer: group 0 (the one holding the first revealed block, (0, 0) when it was).
  static_cast<RevealedTree&>(r) = r.groups[0];
  r.probes_used = stats.probes;
  return r;
}

std::string RevealedText(const Revealed& r) {
  const ProbeSpec& s = r.probes.spec;
  std::string out = absl::StrCat("probes: ", s.op, ", K = ", s.k, ", ", s.dtype, "; outputs ",
                                 r.outputs_source, " (", r.outputs_dtype, ", ", r.outputs_hash,
                                 ")\n");
  absl::StrAppend(&out, "tree: ", RenderText(r.tree), "\n");
  if (!r.tile_trees.empty()) {
    const int t = s.tiles;
    auto at = [&](const std::pair<int64_t, int64_t>& b) {
      return absl::StrCat("(", b.first, ", ", b.second, ")");
    };
    if (r.groups.size() == 1 && r.refused.empty()) {
      absl::StrAppend(&out, "output positions: the same tree in all ", t * t, " probe blocks (",
                      t, " x ", t, ", ", r.block, " rows and columns each)\n");
    } else {
      const size_t others = static_cast<size_t>(t * t) - r.groups[0].blocks.size();
      absl::StrAppend(&out, "output positions: the tree depends on the position: ", others,
                      " of ", t * t, " probe blocks (", r.block, " rows and columns each) differ "
                      "from the tree above (group 0); ", r.groups.size(), " groups of blocks by "
                      "tree, ", r.refused.size(), " blocks refused (no fixed tree):\n");
      for (size_t g = 0; g < r.groups.size(); ++g) {
        const RevealedGroup& grp = r.groups[g];
        std::vector<std::string> where, full;
        for (const auto& b : grp.blocks) {
          where.push_back(absl::StrCat(at(b), ": rows ", b.first, "..", b.first + r.block - 1,
                                       ", columns ", b.second, "..", b.second + r.block - 1));
        }
        for (const PresetMatch& m : grp.presets) {
          if (m.behaviour) full.push_back(m.name);
        }
        absl::StrAppend(&out, "  group ", g, ": blocks at ", absl::StrJoin(where, "; "), "\n",
                        "    tree: ", RenderText(grp.tree), "\n    fused group size ",
                        grp.fused_group, ", fraction bits ",
                        grp.fraction_bits >= 0 ? absl::StrCat(grp.fraction_bits) : "not shown",
                        grp.alignment.empty() ? "" : absl::StrCat(", alignment ", grp.alignment),
                        ", rounding of 2 + 1.5 * 2^-23 ", grp.output_rounding, "\n",
                        "    presets with this tree and behaviour: ",
                        full.empty() ? "none" : absl::StrJoin(full, " "), "\n");
      }
      for (const auto& [b, why] : r.refused) {
        absl::StrAppend(&out, "  refused: block at ", at(b), ": ", why, "\n");
      }
    }
  }
  absl::StrAppend(&out, "probe outputs used: ", r.probes_used, " (M = ", r.probes.big,
                  ", u = ", r.probes.unit, ")\n");
  absl::StrAppend(&out, "fused group size: ", r.fused_group, "\n");
  if (r.fraction_bits >= 0) {
    absl::StrAppend(&out, "fraction bits: ", r.fraction_bits,
                    r.fraction_bits >= kFracMax ? " or more" : "", " (", r.fraction_where,
                    " holding x0, x1)\n");
  } else {
    absl::StrAppend(&out, "fraction bits: not shown (x0 and x1 are not added first)\n");
  }
  if (!r.alignment.empty()) absl::StrAppend(&out, "alignment: ", r.alignment, "\n");
  absl::StrAppend(&out, "rounding of 2 + 1.5 * 2^-23: ", r.output_rounding, "\n");
  std::vector<std::string> full, tree_only;
  for (const PresetMatch& m : r.presets) {
    if (m.behaviour) {
      full.push_back(m.name);
    } else {
      tree_only.push_back(absl::StrCat(m.name, " (", m.differs, ")"));
    }
  }
  absl::StrAppend(&out, "presets with this tree and behaviour: ",
                  full.empty() ? "none" : absl::StrJoin(full, " "), "\n");
  if (!tree_only.empty()) {
    absl::StrAppend(&out, "presets with this tree, other behaviour: ",
                    absl::StrJoin(tree_only, "; "), "\n");
  }
  return out;
}

std::string RevealedDraftModel(const Revealed& r) {
  const ProbeSpec& s = r.probes.spec;
  const bool mm = s.op == "matmul";
  const bool fused = r.fused_group >= 2;
  const std::string where = absl::StrCat("probe: fpconform reveal (", s.op, ", K = ", s.k, ", ",
                                         s.dtype, "), outputs ", r.outputs_source, " ",
                                         r.outputs_hash);
  std::vector<std::pair<std::string, std::string>> prov;
  std::vector<std::string> unconfirmed;
  std::string t = absl::StrCat(
      "# Draft model revealed by fpconform reveal; review before adding to accumulation/models.\n",
      [&] {
        std::vector<std::string> full;
        for (const PresetMatch& m : r.presets) {
          if (m.behaviour) full.push_back(m.name);
        }
        return full.empty() ? std::string("# No preset has this tree and behaviour.\n")
                            : absl::StrCat("# Presets with this tree and behaviour: ",
                                           absl::StrJoin(full, " "), "\n");
      }(),
      "name = ", Quote(absl::StrCat("revealed-", r.outputs_hash.substr(8, 8))), "\n",
      "description = ", Quote(absl::StrCat("Revealed from ", r.outputs_source, " (", s.op,
                                           ", K = ", s.k, ", ", s.dtype, ")")), "\n",
      "operations = ", mm ? "[\"dot\", \"matmul\"]" : "[\"sum\"]", "\n\n[inputs]\na = ",
      Quote(s.dtype), "\n");
  prov.push_back({"inputs.a", where + ": the probe dtype"});
  if (mm) {
    absl::StrAppend(&t, "b = ", Quote(s.dtype), "\n\n[product]\npolicy = \"exact\"\n");
    prov.push_back({"inputs.b", where + ": the probe dtype"});
    prov.push_back({"product.policy", "every probe product is a product of powers of two (exact either way)"});
    unconfirmed.push_back("product.policy");
  }
  const bool nearest = r.output_rounding == "to nearest";
  if (fused) {
    const int f = r.fraction_where == "fused group" ? r.fraction_bits : 24;
    absl::StrAppend(&t, "\n[adder]\nkind = \"fused\"\ngroup = ", r.fused_group,
                    "\nfraction_bits = ", std::clamp(f, 1, 100), "\nalignment = ",
                    Quote(r.alignment.empty() ? "truncate" : r.alignment),
                    "\nnormalization_rounding = ", nearest ? "\"rne\"" : "\"rtz\"", "\n");
    prov.push_back({"adder.kind", where + ": tree nodes with more than two children"});
    prov.push_back({"adder.group", absl::StrCat(where, ": fused group size ", r.fused_group)});
    prov.push_back({"adder.fraction_bits", r.fraction_where == "fused group"
                                               ? where + ": frac_plus probes"
                                               : "not shown by the probes; 24 assumed"});
    if (r.fraction_where != "fused group") unconfirmed.push_back("adder.fraction_bits");
    prov.push_back({"adder.alignment", r.alignment.empty() ? "not shown; truncate assumed"
                                                           : where + ": frac_minus probes"});
    if (r.alignment.empty()) unconfirmed.push_back("adder.alignment");
    prov.push_back({"adder.normalization_rounding", where + ": round_pos / round_neg probes"});
    if (r.output_rounding.rfind("unknown", 0) == 0) unconfirmed.push_back("adder.normalization_rounding");
  } else {
    absl::StrAppend(&t, "\n[adder]\nkind = \"ieee\"\nrounding = ",
                    r.output_rounding == "toward zero" ? "\"rtz\"" : "\"rne\"", "\n");
    prov.push_back({"adder.kind", where + ": a binary tree (two-operand adds)"});
    prov.push_back({"adder.rounding", where + ": round_pos / round_neg probes (" +
                                          r.output_rounding + ")"});
    if (r.fraction_where != "first add" || r.output_rounding.rfind("unknown", 0) == 0) {
      unconfirmed.push_back("adder.rounding");
    }
  }
  std::string acc = "float32";
  std::string acc_note = "not shown by the probes; float32 assumed";
  int acc_bits = -1;
  if (!fused && r.fraction_where == "first add") {
    acc_note = absl::StrCat(where, ": frac_plus probes keep ", r.fraction_bits, " fraction bits");
    if (r.fraction_bits >= 52) {
      acc = "float64";
    } else if (r.fraction_bits == 7) {
      acc = "bfloat16";
    } else if (r.fraction_bits < 23) {
      acc_bits = std::max(r.fraction_bits, 1);
    }
  } else {
    unconfirmed.push_back("accumulator.format");
  }
  absl::StrAppend(&t, "\n[accumulator]\nformat = ", Quote(acc), "\n");
  prov.push_back({"accumulator.format", acc_note});
  if (acc_bits > 0) {
    absl::StrAppend(&t, "fraction_bits = ", acc_bits, "\n");
    prov.push_back({"accumulator.fraction_bits", acc_note});
  }
  absl::StrAppend(&t, "rounding = \"rne\"\n");
  prov.push_back({"accumulator.rounding", "not shown by the probes; RNE assumed"});
  unconfirmed.push_back("accumulator.rounding");
  if (fused) {
    // A sequential chain of fused groups, or split-K slices of such chains (cuBLAS's split-K
    // kernels): the first split_k whose declared tree is the revealed one (fewest slices,
    // smallest multiple, fixed order and sequential combine first).
    Model probe;
    probe.inputs.a = FindFormat(s.dtype);
    probe.adder.kind = AdderKind::kFused;
    probe.adder.group = r.fused_group;
    probe.adder.fraction_bits = 25;
    probe.accumulator.format = &Float32();
    probe.accumulator.fraction_bits = Float32().fraction_bits;
    probe.output.format = &Float32();
    auto same_tree = [&](const Model& m) {
      absl::StatusOr<SumTree> d = BuildSummationTree(m, s.k);
      return d.ok() && SameCanonicalTree(*d, r.tree);
    };
    std::string split;
    if (!same_tree(probe)) {
      const int g = r.fused_group;
      for (int slices = 2; slices <= 16 && split.empty(); ++slices) {
        for (int multiple : {g, 16, 32, 64, 128, 256, 512}) {
          if (multiple % g != 0 || !split.empty()) continue;
          for (SplitOrder order : {SplitOrder::kFixed, SplitOrder::kReverse}) {
            for (CombineOrder combine : {CombineOrder::kSequential, CombineOrder::kPairwise}) {
              if (!split.empty()) break;
              probe.chain.kind = ChainKind::kSplitK;
              probe.chain.slices = slices;
              probe.chain.slice_multiple = multiple;
              probe.chain.order = order;
              probe.chain.combine = combine;
              if (!same_tree(probe)) continue;
              split = absl::StrCat(
                  "slices = ", slices, "\nslice_multiple = ", multiple, "\norder = ",
                  order == SplitOrder::kFixed ? "\"fixed\"" : "\"reverse\"", "\ncombine = ",
                  combine == CombineOrder::kSequential ? "\"sequential\"" : "\"pairwise\"",
                  "\n");
            }
          }
        }
      }
    }
    if (split.empty()) {
      absl::StrAppend(&t, "\n[chain]\nkind = \"sequential\"\n");
      prov.push_back({"chain.kind", where + ": fused groups in order (checked below)"});
    } else {
      absl::StrAppend(&t, "\n[chain]\nkind = \"split_k\"\n", split);
      prov.push_back({"chain.kind", where + ": fused groups in order within contiguous K slices"});
      const std::string measured = absl::StrCat(where, ": the revealed tree at K = ", s.k,
                                                " (the split may differ at other shapes)");
      for (const char* key : {"chain.slices", "chain.order", "chain.combine"}) {
        prov.push_back({key, measured});
      }
      prov.push_back({"chain.slice_multiple",
                      measured + "; the smallest multiple that gives these slices"});
      unconfirmed.push_back("chain.slices");
      unconfirmed.push_back("chain.slice_multiple");
    }
  } else {
    absl::StrAppend(&t, "\n[chain]\nkind = \"tree\"\nshape = ", Quote(Shape(r.tree)), "\n");
    prov.push_back({"chain.kind", where + ": the revealed tree"});
    prov.push_back({"chain.shape", absl::StrCat(where, ": the revealed tree, measured for K = ",
                                                s.k, " only (other lengths not probed)")});
    unconfirmed.push_back("chain.shape");
  }
  const FormatSpec* of = FindFormat(r.outputs_dtype);
  const std::string out_fmt = of != nullptr ? r.outputs_dtype : "float32";
  absl::StrAppend(&t, "\n[output]\nformat = ", Quote(out_fmt), "\nrounding = \"rne\"\n");
  prov.push_back({"output.format", where + ": the outputs' dtype"});
  prov.push_back({"output.rounding", "not shown by the probes; RNE assumed"});
  unconfirmed.push_back("output.rounding");
  absl::StrAppend(&t, "\n[provenance]\n");
  for (const auto& [k, v] : prov) absl::StrAppend(&t, Quote(k), " = ", Quote(v), "\n");
  std::vector<std::string> q;
  for (const std::string& u : unconfirmed) q.push_back(Quote(u));
  absl::StrAppend(&t, "unconfirmed = [", absl::StrJoin(q, ", "), "]\n");
  absl::StatusOr<Model> m = ParseModel(t, "draft");
  std::string check;
  if (!m.ok()) {
    check = absl::StrCat("no: the draft does not parse: ", m.status().message());
  } else {
    absl::StatusOr<SumTree> d = BuildSummationTree(*m, s.k);
    check = d.ok() && SameCanonicalTree(*d, r.tree)
                ? "yes"
                : "no: the draft's tree differs from the revealed one (edit [chain])";
  }
  absl::StrAppend(&t, "# check: the draft's declared tree for K = ", s.k,
                  " equals the revealed tree: ", check, "\n");
  return t;
}

}  // namespace fpconform
