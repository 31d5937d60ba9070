// The plan choices that the command line names (`monokda emulate|gpu|bench --gemv-bands`,
// `--placement`): their values, their parsers and how each one changes a step's PlanParams.
#pragma once
#include <string>

#include "core/config.hpp"
#include "core/plan.hpp"

namespace monokda {

// Who runs in_proj's bands: the plan's choice for the step (auto: PlanPolicy::k3_for / defaults_for),
// SPEC §4's CTAs past the slices (spec), or every CTA (every).
enum class GemvBands { by_plan, spec, every };
GemvBands parse_gemv_bands(const std::string& s);  // "auto" | "spec" | "every"; BadInput otherwise
const char* to_string(GemvBands b);                // the form parse_gemv_bands reads
// Where the lists go in the launch: the plan's rule for the step (auto: PlanPolicy::k3_interleave),
// list b on launch CTA b (index), or paired (interleave_ctas) whatever the rule says.
enum class Placement { by_plan, index, paired };
Placement parse_placement(const std::string& s);  // "auto" | "index" | "paired"; BadInput otherwise
// interleave_ctas for p as it stands (the bands and parts already chosen): k3's rule, or as told
void apply_placement(PlanParams& p, const Config& cfg, Placement placement);
void apply_gemv_bands(PlanParams& p, GemvBands b);  // gemv_every_cta, unless by_plan (spec: one attn CTA a slice too)

}  // namespace monokda
