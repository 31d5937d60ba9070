// The plan choices of the command line (plan_options.hpp).
#include "core/plan_options.hpp"

#include "core/error.hpp"
#include "core/plan_policy.hpp"

namespace monokda {

GemvBands parse_gemv_bands(const std::string& s) {
    if (s == "auto") return GemvBands::by_plan;
    if (s == "spec") return GemvBands::spec;
    if (s == "every") return GemvBands::every;
    bad_input("--gemv-bands must be auto, spec or every (got '" + s + "')");
}

const char* to_string(GemvBands b) { return b == GemvBands::every ? "every" : b == GemvBands::spec ? "spec" : "auto"; }

Placement parse_placement(const std::string& s) {
    if (s == "auto") return Placement::by_plan;
    if (s == "index") return Placement::index;
    if (s == "paired") return Placement::paired;
    bad_input("--placement must be auto, index or paired (got '" + s + "')");
}

void apply_placement(PlanParams& p, const Config& cfg, Placement placement) {
    p.interleave_ctas = placement == Placement::by_plan ? PlanPolicy::k3_interleave(cfg, p) : placement == Placement::paired;
    p.interleave_width = PlanPolicy::k3_interleave_width(p);
}

void apply_gemv_bands(PlanParams& p, GemvBands b) {
    if (b != GemvBands::by_plan) p.gemv_every_cta = b == GemvBands::every;
    if (b == GemvBands::spec) p.attn_row_parts = 1;  // SPEC §4's layout: the bands start past one CTA a slice
}

}  // namespace monokda
