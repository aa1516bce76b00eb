#include "accumulation/fast_plan.h"

#include <bit>
#include <cfenv>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "accumulation/bound_step.h"
#include "base/isa.h"
#include "formats/ops.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fpconform::fast_internal {
namespace {

using accumulation_internal::Eta;
using accumulation_internal::UnitRoundoff;

// The whitelist below reads every member of these structs. A member added later must be checked
// there too (or the model must be made ineligible when it is set); these asserts make the build
// say so instead of silently accepting models with a feature this file does not implement.
// (A new bool that lands in padding does not change the size: review the struct on every change.)
static_assert(sizeof(OpEnv) == 24, "OpEnv changed: extend EnvSupported in fast_plan.cc");
static_assert(sizeof(Model::Inputs) == 56, "Model::Inputs changed: extend MakePlan");
static_assert(sizeof(Model::Product) == 40, "Model::Product changed: extend MakePlan");
static_assert(sizeof(Model::Adder) == 48, "Model::Adder changed: extend MakePlan");
static_assert(sizeof(Model::Accumulator) == 40, "Model::Accumulator changed: extend MakePlan");
static_assert(sizeof(Model::Chain) == 160, "Model::Chain changed: extend MakePlan");
static_assert(sizeof(Model::Output) == 32, "Model::Output changed: extend MakePlan");
// Model::Epilogue's scale and scale_order are not read by any evaluator: the scale stage runs
// after EvaluateDot / EvaluateMatmul (accumulation/epilogue.h). Its scale_block and block_apply
// are read only by EvaluateBlockScaledDot (generic engine); a fast path evaluates such a model
// without scales, which is the generic engine's value with every block scale 1.
static_assert(sizeof(Model::Epilogue) == 40, "Model::Epilogue changed: extend MakePlan");

// Formats whose every finite value is a float32 (so the float table is exact).
bool FitsFloat32(const FormatSpec& f) {
  return IsFloat(f) && f.has_sign && f.has_zero && f.fraction_bits <= 23 && Emax(f) <= 127 &&
         MinSubnormalExponent(f) >= -149;
}

const Table* GetTable(const FormatSpec& f) {
  static std::mutex mu;
  static std::map<const FormatSpec*, std::unique_ptr<Table>>* tables =
      new std::map<const FormatSpec*, std::unique_ptr<Table>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = tables->find(&f);
  if (it != tables->end()) return it->second.get();
  std::unique_ptr<Table> t;
  if (f.width <= 16 && f.pad_bits == 0 && FitsFloat32(f)) {
    t = std::make_unique<Table>();
    const size_t n = size_t{1} << f.width;
    t->mask = n - 1;
    t->value.resize(n);
    t->pow.resize(n);
    for (uint64_t bits = 0; bits < n; ++bits) {
      const OpResult r = Convert(f, Float32(), bits, OpEnv{});
      const float v = std::bit_cast<float>(static_cast<uint32_t>(r.bits));
      t->value[bits] = v;
      double p = 0;
      if (std::isfinite(v) && v != 0) {
        const int nominal = std::max(std::ilogb(v), Emin(f));
        p = std::ldexp(1.0, nominal);
      }
      t->pow[bits] = p;
      if (std::isfinite(v) && (r.flags & kInexact) != 0) {
        t.reset();  // Not exact: the format is not supported.
        break;
      }
    }
  }
  const Table* out = t.get();
  (*tables)[&f] = std::move(t);
  return out;
}

// An OpEnv this file implements: rne (or rtz where allow_rtz) with nothing else set. NaN
// profiles and tininess only change NaN bits and flags, which never come from the fast paths.
bool EnvSupported(const OpEnv& e, bool allow_rtz) {
  switch (e.rounding) {
    case Rounding::kNearestEven: break;
    case Rounding::kTowardZero:
      if (!allow_rtz) return false;
      break;
    default: return false;
  }
  if (e.sr_bits != 0 || e.saturate || e.flush_to_zero || e.denormals_are_zero) return false;
  switch (e.tininess) {
    case Tininess::kAfterRounding:
    case Tininess::kBeforeRounding: break;
    default: return false;
  }
  switch (e.nan) {
    case NanProfile::kIeee:
    case NanProfile::kCanonical:
    case NanProfile::kCuda:
    case NanProfile::kX86: break;
    default: return false;
  }
  return true;
}

// The combine orders of strided and split_k chains that WalkChain runs.
bool WalkedCombine(CombineOrder combine) {
  return combine == CombineOrder::kSequential || combine == CombineOrder::kPairwise;
}

bool InputKindFor(const FormatSpec* f, InputKind& kind, const Table*& table) {
  if (f == nullptr) return false;
  // Decoded by bit operations: float32, float64, and bfloat16 and float16 too (their 64K-entry
  // tables miss the caches); every other format through its table.
  const std::pair<const FormatSpec*, InputKind> direct[] = {{&Float32(), InputKind::kFloat32},
                                                            {&Float64(), InputKind::kFloat64},
                                                            {&BFloat16(), InputKind::kBFloat16},
                                                            {&Float16(), InputKind::kFloat16}};
  for (const auto& [format, direct_kind] : direct) {
    if (f == format) {
      kind = direct_kind;
      return true;
    }
  }
  table = GetTable(*f);
  kind = InputKind::kTable;
  return table != nullptr;
}

}  // namespace

const char* MakePlan(const Model& m, Plan& plan) {
  plan.model = &m;
  // adder.kind = "integer": exact integer sums, on the generic path (evaluate.cc).
  if (m.adder.kind == AdderKind::kInteger) return "adder.kind integer";
  // Inputs.
  const bool f64_in = m.inputs.a == &Float64() || m.inputs.b == &Float64();
  if (f64_in) {
    // float64 inputs: both float64, read as they are, into a float64 host accumulator (checked
    // below).
    if (m.inputs.a != &Float64() || m.inputs.b != &Float64()) return "inputs.a/b float64 mixed";
    if (m.inputs.daz) return "inputs.daz with float64 inputs";
  }
  if (m.inputs.daz) {
    if (m.inputs.convert_to != nullptr) return "inputs.daz with convert_to";
    if (m.inputs.a == nullptr || m.inputs.b == nullptr) return "inputs.a";
    plan.input_daz = true;
    plan.daz_min_a = std::ldexp(1.0f, Emin(*m.inputs.a));
    plan.daz_min_b = std::ldexp(1.0f, Emin(*m.inputs.b));
  }
  if (m.inputs.convert_to != nullptr) {
    if (m.inputs.convert_to != &TFloat32()) return "inputs.convert_to";
    if (m.inputs.a != &Float32() || m.inputs.b != &Float32()) return "inputs.convert_to from";
    if (m.inputs.convert_env.rounding != Rounding::kTowardZero ||
        !EnvSupported(m.inputs.convert_env, /*allow_rtz=*/true)) {
      return "inputs.convert_rounding";
    }
    plan.convert = true;
    plan.in_a = plan.in_b = InputKind::kTf32Rtz;
  } else {
    if (!InputKindFor(m.inputs.a, plan.in_a, plan.table_a)) return "inputs.a";
    if (!InputKindFor(m.inputs.b, plan.in_b, plan.table_b)) return "inputs.b";
  }
  const FormatSpec* acc = m.accumulator.format;
  if (acc == nullptr) return "accumulator.format";
  if (f64_in && (acc != &Float64() || m.adder.kind == AdderKind::kFused)) {
    return "accumulator.format with float64 inputs";
  }
  // Adder and product.
  switch (m.adder.kind) {
    case AdderKind::kIeee:
    case AdderKind::kFma:
    case AdderKind::kKahan: {
      plan.kahan = m.adder.kind == AdderKind::kKahan;
      if (acc == &Float32()) {
        plan.arith = Plan::Arith::kHostF32;
      } else if (acc == &Float64()) {
        plan.arith = Plan::Arith::kHostF64;
      } else if (acc == &BFloat16()) {
        // AddRoundBf16Exact on exact products (bfloat16 inputs: 8 + 8 significant bits, exact
        // in double), one adder step per product in order.
        if (plan.kahan) return "accumulator.format bfloat16 with kahan";
        if (plan.in_a != InputKind::kBFloat16 || plan.in_b != InputKind::kBFloat16) {
          return "accumulator.format bfloat16 with inputs other than bfloat16";
        }
        if (m.product.policy != ProductPolicy::kExact) return "product.policy";
        if (m.chain.kind != ChainKind::kSequential) return "chain.kind with a bfloat16 accumulator";
        plan.arith = Plan::Arith::kHostF32;
        plan.acc_bf16 = true;
      } else {
        return "accumulator.format";
      }
      if (m.accumulator.fraction_bits != acc->fraction_bits) return "accumulator.fraction_bits";
      OpEnv env = m.adder.env;
      plan.ftz = env.flush_to_zero;
      plan.acc_daz = env.denormals_are_zero;
      env.flush_to_zero = env.denormals_are_zero = false;
      if (!EnvSupported(env, false)) return "adder.rounding";
      if ((plan.ftz || plan.acc_daz) && (acc != &Float32() || plan.kahan)) return "adder.ftz/daz";
      if (plan.acc_bf16 && m.output.format != &BFloat16()) return "output.format";
      switch (m.product.policy) {
        case ProductPolicy::kExact: break;
        case ProductPolicy::kRound:
          if (m.adder.kind == AdderKind::kFma) return "product.policy";
          if (m.product.format != acc) return "product.format";
          if (!EnvSupported(m.product.env, false)) return "product.rounding";
          plan.round_product = true;
          break;
        default: return "product.policy";
      }
      break;
    }
    case AdderKind::kFused: {
      plan.arith = Plan::Arith::kFused;
      if (plan.input_daz) return "inputs.daz with a fused adder";
      if (acc != &Float32()) return "accumulator.format";
      if (m.accumulator.fraction_bits < 1 || m.accumulator.fraction_bits > 23) {
        return "accumulator.fraction_bits";
      }
      if (m.product.policy != ProductPolicy::kExact) return "product.policy";
      if (!EnvSupported(m.adder.env, true)) return "adder.normalization_rounding";
      plan.rne = m.adder.env.rounding == Rounding::kNearestEven;
      plan.group = m.adder.group;
      plan.fraction_bits = m.adder.fraction_bits;
      if (plan.group < 1 || plan.group > 256) return "adder.group";
      // Exact double sum: (G + 1) terms each < 2^(F+2) -> F + 2 + ceil(log2(G + 1)) <= 53.
      const int log_terms = std::bit_width(static_cast<unsigned>(plan.group));
      if (plan.fraction_bits < 0 || plan.fraction_bits + 2 + log_terms > 53) {
        return "adder.fraction_bits";
      }
      switch (m.adder.alignment) {
        case Alignment::kTruncate: plan.round_down = false; break;
        case Alignment::kRoundDown: plan.round_down = true; break;
        default: return "adder.alignment";
      }
      // adder.overflow: an overflowing group goes to the generic path (RoundGroup's `bad`), so
      // both values are fine here; anything else is not.
      if (m.adder.overflow != FusedOverflow::kIeee && m.adder.overflow != FusedOverflow::kInf) {
        return "adder.overflow";
      }
      switch (m.adder.alignment_exponent) {
        case AlignmentExponent::kNominal: plan.actual = false; break;
        case AlignmentExponent::kActual: plan.actual = true; break;
        default: return "adder.alignment_exponent";
      }
      plan.acc_fraction_bits = m.accumulator.fraction_bits;
      plan.two_f = std::ldexp(1.0, plan.fraction_bits);
      plan.two_mf = std::ldexp(1.0, -plan.fraction_bits);
      break;
    }
    default: return "adder.kind";
  }
  if (!EnvSupported(m.accumulator.combine_env, false)) return "accumulator.rounding";
  // Combine adds (blocked, pairwise) round to the accumulator's fraction bits: a host add does
  // that only at full precision. (promote rounds into chain.format, checked below.)
  const bool has_combine =
      m.chain.kind != ChainKind::kSequential && m.chain.kind != ChainKind::kPromote;
  if (has_combine && m.accumulator.fraction_bits != acc->fraction_bits) {
    return "accumulator.fraction_bits with combine adds";
  }
  // Chain.
  if (!m.chain.permutation.empty()) return "chain.permutation";
  if (plan.kahan && m.chain.kind != ChainKind::kSequential) return "chain.kind with kahan";
  plan.chain = m.chain.kind;
  switch (m.chain.kind) {
    case ChainKind::kSequential: break;
    case ChainKind::kBlocked:
      if (m.chain.block < 1) return "chain.block";
      plan.chunk = m.chain.block;
      break;
    case ChainKind::kPairwise:
      if (plan.arith == Plan::Arith::kFused) return "chain.kind pairwise with a fused adder";
      if (m.chain.leaf < 1 || m.chain.unroll < 1 || m.chain.split_multiple < 1) {
        return "chain.pairwise";
      }
      if (m.chain.chunk < 0) return "chain.chunk";
      plan.chunk = m.chain.chunk;
      plan.leaf = m.chain.leaf;
      plan.unroll = m.chain.unroll;
      plan.split_multiple = m.chain.split_multiple;
      break;
    // Kinds run through chain_walk.h's WalkChain (the generic evaluator's own order) on host
    // nodes, element by element in matmuls. Values the walk does not list are refused.
    case ChainKind::kStrided:
      if (m.chain.ways < 1) return "chain.ways";
      if (!WalkedCombine(m.chain.combine)) return "chain.combine";
      break;
    case ChainKind::kSplitK:
      if (m.chain.slices < 1) return "chain.slices";
      if (m.chain.order != SplitOrder::kFixed && m.chain.order != SplitOrder::kRandom &&
          m.chain.order != SplitOrder::kReverse) {
        return "chain.order";
      }
      if (m.chain.slice_multiple < 1) return "chain.slice_multiple";
      if (!WalkedCombine(m.chain.combine)) return "chain.combine";
      break;
    case ChainKind::kSimd:
    case ChainKind::kCascade:
      if (plan.arith == Plan::Arith::kFused) return "chain.kind simd/cascade with a fused adder";
      if (m.chain.lanes < 1) return "chain.lanes";
      if (m.chain.kind == ChainKind::kSimd) {
        if (m.chain.unit < 1) return "chain.unit";
        if (m.chain.unit_order != UnitOrder::kForward &&
            m.chain.unit_order != UnitOrder::kReverse) {
          return "chain.unit_order";
        }
        if (m.chain.reduce != CombineOrder::kSequential &&
            m.chain.reduce != CombineOrder::kPairwise &&
            m.chain.reduce != CombineOrder::kHalving) {
          return "chain.reduce";
        }
      }
      break;
    case ChainKind::kTree:
      if (plan.arith == Plan::Arith::kFused) return "chain.kind tree with a fused adder";
      if (m.chain.tree.empty() || m.chain.tree_units < 1 || m.chain.tree_root < 0 ||
          static_cast<size_t>(m.chain.tree_root) >= m.chain.tree.size()) {
        return "chain.shape";
      }
      break;
    case ChainKind::kPromote:
      if (m.chain.every < 1) return "chain.every";
      if (acc != &Float32()) return "chain.format";
      if (m.chain.promote_format == &BFloat16() && plan.arith != Plan::Arith::kFused) {
        plan.promote_bf16 = true;  // Rounded by RoundToBf16 (round to odd, then rne).
      } else if (m.chain.promote_format != &Float32()) {
        return "chain.format";
      }
      if (!EnvSupported(m.chain.promote_env, false)) return "chain.rounding";
      plan.chunk = m.chain.every;
      break;
    default: return "chain.kind";
  }
  // Epilogue: c after the chain runs on the generic path only.
  if (m.epilogue.c != EpilogueC::kChain) return "epilogue.c";
  // Output.
  const FormatSpec& final_format = m.FinalAccumulatorFormat();
  if (m.output.format == nullptr) return "output.format";
  if (m.output.format != &final_format) {
    if (&final_format == &Float64() && m.output.format == &Float32()) {
      plan.f64_to_f32_output = true;
    } else if (&final_format == &Float32() && m.output.format == &BFloat16() &&
               plan.arith != Plan::Arith::kFused) {
      plan.f32_to_bf16_output = true;
    } else {
      return "output.format";
    }
    if (!EnvSupported(m.output.env, false)) return "output.rounding";
    plan.u_out = UnitRoundoff(m.output.format->fraction_bits, m.output.env);
    plan.eta_out = std::ldexp(1.0, MinSubnormalExponent(*m.output.format));
  }
  // Bound constants, as evaluate.cc's MakeRounder.
  plan.u_acc = UnitRoundoff(m.accumulator.fraction_bits, m.adder.env);
  plan.eta_acc = Eta(*acc, m.accumulator.fraction_bits, plan.ftz);
  plan.u_comb = UnitRoundoff(m.accumulator.fraction_bits, m.accumulator.combine_env);
  plan.eta_comb = Eta(*acc, m.accumulator.fraction_bits);
  if (m.chain.kind == ChainKind::kPromote) {
    plan.u_prom = UnitRoundoff(m.chain.promote_format->fraction_bits, m.chain.promote_env);
    plan.eta_prom = Eta(*m.chain.promote_format, m.chain.promote_format->fraction_bits);
  }
  const bool fixed_chain = m.chain.kind == ChainKind::kSequential ||
                           m.chain.kind == ChainKind::kBlocked ||
                           m.chain.kind == ChainKind::kPromote ||
                           (m.chain.kind == ChainKind::kPairwise && plan.unroll == 1);
  plan.walk = plan.arith != Plan::Arith::kFused && !plan.kahan &&
              (!fixed_chain || plan.ftz || plan.acc_daz || plan.promote_bf16 ||
               plan.f32_to_bf16_output || plan.acc_bf16);
  return "";
}

bool HostReady() {
#if defined(__x86_64__)
  // ActiveIsa() (base/isa.h): kAvx2 and kAvx512 both mean AVX2 and FMA are there;
  // FPCONFORM_ISA=portable sends every call to the generic path.
  if (ActiveIsa() == Isa::kPortable) return false;
  const unsigned csr = _mm_getcsr();
  // RC (bits 13-14) = 0: round to nearest even; FZ (bit 15) and DAZ (bit 6) clear.
  return (csr & 0xE040u) == 0 && std::fegetround() == FE_TONEAREST;
#else
  return false;
#endif
}

}  // namespace fpconform::fast_internal
