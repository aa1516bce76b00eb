#include "reports/audit_composite.h"

#include <algorithm>
#include <cmath>

#include "base/data_dir.h"
#include "base/str_cat.h"
#include "base/user_file.h"
#include "formats/ops.h"
#include "reports/audit_values.h"

namespace fpconform::reports::audit_internal {

absl::Status CompositePlatforms::Resolve(composite::CompositeKind kind, const std::string& fn,
                                         const FormatSpec& x, const FormatSpec& out,
                                         const AuditOptions& options, const OpEnv& out_rounding,
                                         AuditSetup& setup) {
  dir = options.composite_models_dir.empty() ? SourceDataPath(DataItem::kCompositeModels)
                                             : options.composite_models_dir;
  absl::StatusOr<std::vector<composite::CompositeModel>> loaded = composite::LoadCompositeModels(dir);
  if (!loaded.ok()) return loaded.status();
  catalog = *std::move(loaded);
  const char* kind_name = kind == composite::CompositeKind::kAxis ? "axis" : "elementwise";
  const auto add = [&](const composite::CompositeModel& m) {
    for (const composite::CompositeModel* have : models) {
      if (have == &m) return;
    }
    AuditPlatform p;
    p.name = m.name;
    p.hash = TextFileHash(Cat(dir, "/", m.name, ".toml"));
    setup.platforms.push_back(std::move(p));
    models.push_back(&m);
    functions.push_back(m.Find(fn));
  };
  if (options.platforms.empty()) {
    return absl::InvalidArgumentError(
        Cat("no platform given: name one or more (--platform P[,P...]) or 'auto' (the ", kind_name,
            " models are in ", dir, ")"));
  }
  for (const std::string& name : options.platforms) {
    if (name == "auto") {
      for (const composite::CompositeModel& m : catalog) {
        if (m.kind == kind && m.Find(fn) != nullptr && m.input == &x && m.output == &out) add(m);
      }
      continue;
    }
    const composite::CompositeModel* found = nullptr;
    std::vector<std::string> names;
    for (const composite::CompositeModel& m : catalog) {
      if (m.kind != kind) continue;
      names.push_back(m.name);
      if (m.name == name) found = &m;
    }
    if (found == nullptr) {
      return absl::InvalidArgumentError(Cat("--platform: no ", kind_name, " model '", EscapeText(name, 200),
                                            "' in ", dir, " (valid: ", Join(names, " "), ")"));
    }
    if (found->Find(fn) == nullptr) {
      return absl::InvalidArgumentError(Cat("--platform: model '", name, "' has no ", fn));
    }
    if (found->input != &x) {
      return absl::InvalidArgumentError(Cat("X is ", x.name, " but platform ", name, " takes ",
                                            found->input->name, " inputs"));
    }
    add(*found);
  }
  if (setup.platforms.empty()) {
    return absl::InvalidArgumentError(Cat("--platform auto: no ", kind_name, " model computes ", fn,
                                          " from ", x.name, " into ", out.name, " (see ", dir, ")"));
  }
  for (size_t p = 0; p < models.size(); ++p) {
    if (models[p]->output != &out) {
      setup.notes.push_back(Cat("the output is ", out.name, " while ", models[p]->name, " writes ",
                                models[p]->output->name, ": emulated values and enclosures converted with ",
                                RoundingName(out_rounding)));
    }
    if (!models[p]->unconfirmed.empty()) {
      setup.notes.push_back(Cat(models[p]->name, ": unconfirmed parameters (no source or measurement ",
                                "confirms them): ", Join(models[p]->unconfirmed, ", ")));
    }
    if (!functions[p]->exact()) {
      setup.notes.push_back(Cat(models[p]->name, ": ", fn, " is not bit-reproducible from the model ",
                                "(elementary functions that are not correctly rounded, reduction orders or ",
                                "fused products left open): its emulated value is one conforming ",
                                "implementation, its bound covers them all"));
    }
  }
  return absl::OkStatus();
}

void EnclosureOp::Exact(int64_t e, bool in_block, OpScratch& scratch, ExactFacts& facts) const {
  Scratch& s = static_cast<Scratch&>(scratch);
  s.exact = in_block ? block_exact_[static_cast<size_t>(e - block_e0_)] : ExactOutsideBlock(e);
  FactsFromEnclosure(s.exact, s.x, facts);
}

void FactsFromEnclosure(const ExactEnclosure& x, Mpfr& value, ExactFacts& facts) {
  facts = ExactFacts{};
  facts.nan = std::isnan(x.nearest);
  facts.inf = std::isinf(x.lo) && x.lo == x.hi;
  facts.negative = std::signbit(x.nearest);
  facts.x = x.nearest;
  if (facts.nan || facts.inf) return;
  if (!std::isfinite(x.hi) || !std::isfinite(x.lo)) {
    facts.inf = true;
    facts.x = x.lo < 0 ? -INFINITY : INFINITY;
    facts.negative = x.lo < 0;
    return;
  }
  mpfr_set_d(value.v, x.nearest, MPFR_RNDN);
  facts.mp = value.v;
  facts.mp_error = x.hi - x.lo;  // nearest lies in [lo, hi], as the exact value does.
}

Emulated EmulatedFromEnclosure(uint64_t bits, double lo, double hi, const FormatSpec& model_out,
                               const FormatSpec& out, const OpEnv& out_rounding, double exact_lo,
                               double exact_hi) {
  Emulated em;
  em.bits = bits;
  if (&model_out != &out) {
    em.bits = Convert(model_out, out, bits, out_rounding).bits;
    lo = ToDouble(out, DoubleToBits(out, lo, out_rounding));
    hi = ToDouble(out, DoubleToBits(out, hi, out_rounding));
  }
  // The pipeline measures |out - exact| as |out - nearest| + (exact_hi - exact_lo) (audit_op.h,
  // ExactFacts::mp_error), rounded up: the bound carries the same width so that an output at an
  // end of the enclosure stays within it.
  const double b = (std::max(hi - exact_lo, exact_hi - lo) + (exact_hi - exact_lo)) * kUp * kUp;
  em.bound = std::isfinite(b) && b >= 0 ? b : NAN;
  return em;
}

}  // namespace fpconform::reports::audit_internal
