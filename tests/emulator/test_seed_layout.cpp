// The seed kernel's MI355X layout (SPEC §4.1) as its users describe it: the plan file that
// examples/plans/seed_mi355x.py writes, independently of monokda's builder. It is the same plan as
// Plan::build gives for those knobs, it passes under random, PCT and delay schedules at 1×1, 2×4 and
// 8×8 with AMD in-order load retirement on, and every planted fault that applies to it is caught.
#include <doctest/doctest.h>

#include <map>

#include "emu_util.hpp"
#include "tests/cli/cli_run.hpp"
#include "tests/core/plan_compare.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;
using monokda::test::first_difference;

namespace {

// The generator's file for R × L (nb 4), read back.
Plan seed_plan(int R, int L) {
    monokda::test::TempDir dir("seed_" + std::to_string(R) + "x" + std::to_string(L));
    const std::string f = dir / "seed.json";
    const auto r = monokda::test::run_cli_line("'" + std::string(MONOKDA_SOURCE_DIR) + "/examples/plans/seed_mi355x.py' --R " +
                                                   std::to_string(R) + " --L " + std::to_string(L) + " -o '" + f + "'",
                                               MONOKDA_PYTHON);
    REQUIRE_MESSAGE(r.code == 0, r.out);
    return Plan::read_json(f);
}

// SPEC §4.1's knobs on monokda's builder: 256 CTAs, 128-column slices, 16-row groups and chunks,
// bands past the slices, CTAs in index order, AMD in-order retirement.
Plan built_seed(int R, int L) {
    Config c = Config::preset("k3");
    c.R = R;
    c.L = L;
    c.slots = c.S() + 1;
    Plan p = Plan::build(c, PlanParams{256, 128, 16, 16});
    PlanTarget t = p.target();
    t.in_order_loads = true;  // an AMD part
    p.set_target(t);
    return p;
}

// What each planted fault must be caught as (test_faults.cpp says why, fault by fault).
const std::map<Fault, std::vector<Verdict>>& expected() {
    static const std::map<Fault, std::vector<Verdict>> m = {
        {Fault::missing_xrdy, {Verdict::LIVELOCK}},
        {Fault::flag_before_data, {Verdict::VISIBILITY_FAULT}},
        {Fault::stale_epoch_tag, {Verdict::LIVELOCK}},
        {Fault::epoch_by_value, {Verdict::STALE_READ}},
        {Fault::slice_off_by_one, {Verdict::WRITE_CONFLICT}},
        {Fault::x_before_flag, {Verdict::VISIBILITY_FAULT}},
        {Fault::kda_skips_proj_wait, {Verdict::VISIBILITY_FAULT}},
        {Fault::partial_counted_twice, {Verdict::WRONG_SPLIT}},
        {Fault::too_few_resident, {Verdict::DEADLOCK}},
        {Fault::poll_behind_loads, {Verdict::POLL_BEHIND_LOADS}},
        {Fault::wrong_accepted_window, {Verdict::WRONG_RESULT}},
        {Fault::x_store_off_by_one, {Verdict::STALE_READ}},
        {Fault::g1_share_short, {Verdict::STALE_READ, Verdict::VISIBILITY_FAULT}},
        {Fault::gate_polls_last_partial, {Verdict::STALE_READ}},
        {Fault::g1_share_long, {Verdict::WRITE_CONFLICT}},
        {Fault::kda_loads_at_start, {Verdict::POLL_BEHIND_LOADS}},
        {Fault::decay_fast_exp, {Verdict::WRONG_RESULT}},
    };
    return m;
}

}  // namespace

TEST_CASE("the generator's seed layout is the plan monokda builds from SPEC 4.1's knobs") {
    for (const auto& shape : {std::pair{1, 1}, std::pair{2, 4}}) {
        const int R = shape.first, L = shape.second;
        CAPTURE(R);
        CAPTURE(L);
        const Plan p = seed_plan(R, L);
        CHECK(p.structural_problems().empty());
        CHECK(first_difference(p, built_seed(R, L)) == "");
        CHECK(p.target().in_order_loads);
        CHECK(p.co_resident() == 256);
        CHECK(p.n_attn_ctas() == 56);
        CHECK(p.gemv_cta(0) == 56);
        CHECK(p.gemv_cta(1) == 56);  // two groups a gemv CTA
        CHECK(p.gemv_cta(2) == 57);
        REQUIRE(p.blocks() > 56);
        REQUIRE(!p.instrs(56).empty());
        CHECK(p.instrs(56)[0].opcode() == Op::GEMV_PREFETCH);  // the first group's weights at launch
        CHECK(p.n_chunks() == 8);                               // 16-row chunks
        CHECK(p.kda_cta(0, 0, 0) == 0);                         // kda tasks from CTA 0 on
    }
}

TEST_CASE("the seed layout passes under random, PCT and delay schedules, and every applicable fault is caught") {
    for (const auto& shape : {std::pair{1, 1}, std::pair{2, 4}, std::pair{8, 8}}) {
        const int R = shape.first, L = shape.second;
        EmulateOptions o;
        o.fixture.R = R;
        o.fixture.L = L;
        o.envelope_orders = -1;
        o.plan = std::make_shared<const Plan>(seed_plan(R, L));
        Prepared prep = prepare(o, 2);
        for (const char* sched : {"random", "pct", "delay:kda"}) {
            EmulateOptions r = o;
            r.schedule = Schedule::parse(sched);
            r.schedule.seed = uint64_t(R + L);
            CAPTURE(R);
            CAPTURE(L);
            CAPTURE(sched);
            const EmulateResult clean = emulate(prep, r);
            INFO(clean.report);
            CHECK(clean.verdict == Verdict::PASS);
            CHECK(contains(clean.report, "AMD in-order loads on"));
            for (const FaultInfo& f : fault_list()) {
                if (f.kernel != 1) continue;  // kernel v2's faults: tests/emulator/test_v2_faults.cpp
                r.fault = f.fault;
                EmulateResult bad;
                try {
                    bad = emulate(prep, r);
                } catch (const BadInput& e) {  // the fault cannot show in this step (FaultHooks::require)
                    MESSAGE((std::string(f.name) + " does not apply at " + std::to_string(R) + "x" + std::to_string(L) + ": " + e.what()));
                    continue;
                }
                CAPTURE(f.name);
                INFO(bad.report);
                if (f.race && bad.verdict == Verdict::PASS) continue;  // this schedule's delays kept the stores in order
                CHECK(bad.verdict != Verdict::PASS);
                const auto it = expected().find(f.fault);
                if (it != expected().end())
                    CHECK(std::find(it->second.begin(), it->second.end(), bad.verdict) != it->second.end());
            }
        }
    }
}
