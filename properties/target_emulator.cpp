// The emulator as a target (properties/target_emulator.hpp): the step's plan, run once under a seeded
// random schedule.
#include "properties/target_emulator.hpp"

#include <algorithm>

#include "core/plan.hpp"
#include "core/plan_options.hpp"
#include "core/plan_policy.hpp"
#include "emulator/machine.hpp"

namespace monokda::props {

namespace {

// The plan a case runs: its seed picks among the layouts the kernels use.
Plan plan_for(const StepInputs& in) {
    PlanParams pp = PlanPolicy::defaults_for(in.cfg);
    // seeds 2, 3 mod 4: the in_proj bands over every CTA, as k3 deals them from 16 rows on
    if (in.cfg.seed % 4 >= 2) apply_gemv_bands(pp, GemvBands::every);
    // seeds 4..7 mod 8 with two rows or more: two attn CTAs a slice (as k3 has from 16 rows on),
    // with the CTAs that takes
    if (in.cfg.seed % 8 >= 4 && in.cfg.S() >= 2) {
        pp.attn_row_parts = 2;
        pp.blocks = std::max(pp.blocks, 2 * (in.cfg.D / pp.slice_width) + 8);
    }
    Plan plan = Plan::build(in.cfg, pp);  // BadInput: a config it cannot plan
    // odd seeds: the kda tasks in two teams a CTA, as the NVIDIA kernel runs them
    if (in.cfg.seed % 2 == 1) plan = plan.with_kda_teams(2);
    return plan;
}

}  // namespace

Target emulator_target() {
    Target t;
    t.name = "emulator";
    t.declared_order = [](const StepInputs& in) { return plan_for(in).reduction_order().str(); };
    t.run = [](const StepInputs& in) {
        const Plan plan = plan_for(in);
        emu::MachineOptions mo;
        mo.schedule.seed = in.cfg.seed;  // the schedule is part of the case: a fixture replays the same run
        emu::MachineResult r = emu::run_machine(plan, in, mo);
        if (r.verdict != emu::Verdict::PASS || r.outputs.empty())
            throw TargetFailure(std::string("emulator: ") + emu::to_string(r.verdict) + ": " + r.detail);
        return std::move(r.outputs[0]);
    };
    return t;
}

}  // namespace monokda::props
