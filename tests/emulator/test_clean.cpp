// The clean plan is never flagged, and what it computes is the reference in the plan's order, bit
// for bit: under every scheduler, with the AMD knob, over several steps across the epoch wrap, for
// other CTA counts and fixture shapes. Expected values come from the reference, run here.
#include <doctest/doctest.h>

#include "core/fixture_gen.hpp"
#include "emu_util.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

namespace {

// The plan run under a random (odd seed) and a PCT (even seed) schedule: PASS, and the reference in
// the plan's order bit for bit.
void passes_bit_for_bit(const Plan& plan, const StepInputs& in, std::initializer_list<uint64_t> seeds, const std::string& what) {
    const auto expect = ref::run<float>(in, plan.reduction_order());
    for (uint64_t seed : seeds) {
        MachineOptions mo;
        mo.schedule.kind = seed % 2 ? Schedule::random : Schedule::pct;
        mo.schedule.seed = seed;
        MachineResult r = run_machine(plan, in, mo);
        INFO(what, ": ", r.detail);
        REQUIRE(r.verdict == Verdict::PASS);
        CHECK(first_different(r.outputs[0], expect) == "");
    }
}

}  // namespace

TEST_CASE("clean plan, small preset: every scheduler passes and matches the reference bit for bit") {
    Prepared& p = small_prepared();
    const StepOutputs<float> expect = ref::run<float>(p.input, p.plan.reduction_order());
    for (const char* s : {"random", "pct", "pct:1", "pct:6", "rr", "delay:attn", "delay:gemv", "delay:kda",
                          "delay:cta:0", "delay:cta:16", "delay:cta:23"}) {
        for (uint64_t seed : {1ull, 2ull, 77ull}) {
            EmulateOptions o = small_options();
            o.schedule = Schedule::parse(s);
            o.schedule.seed = seed;
            for (bool amd : {false, true}) {
                o.amd = amd;
                EmulateResult r = emulate(p, o);
                INFO(s, " seed ", seed, " amd ", amd, "\n", r.report);
                REQUIRE(r.verdict == Verdict::PASS);
                REQUIRE(r.run.steps_done == 1);
                CHECK(first_different(r.run.outputs[0], expect) == "");
            }
        }
    }
}

TEST_CASE("the comparison can fail: the plan's order is not the sequential reference") {
    // on k3-sized sums the split changes roundings; on the small preset check the pieces that the
    // plan decomposes (the slice split of x's D-sums) through a larger-D config
    Config c = Config::preset("small");
    c.D = 1024;
    c.N = 288;
    StepInputs in = make_fixture(c);
    Plan plan = Plan::build(in.cfg, PlanPolicy::defaults_for(in.cfg));
    auto split = ref::run<float>(in, plan.reduction_order());
    auto seq = ref::run<float>(in, {});
    CHECK(first_different(split, seq) != "");
    MachineResult r = run_machine(plan, in, MachineOptions{});
    REQUIRE(r.verdict == Verdict::PASS);
    CHECK(first_different(r.outputs[0], split) == "");
    CHECK(first_different(r.outputs[0], seq) != "");
}

TEST_CASE("several steps over one mailbox memory, across the epoch counter's wrap") {
    Prepared& p = small_prepared();
    EmulateOptions o = small_options();
    o.steps = 4;
    for (const char* s : {"random", "pct", "rr"}) {
        o.schedule = Schedule::parse(s);
        EmulateResult r = emulate(p, o);
        INFO(r.report);
        REQUIRE(r.verdict == Verdict::PASS);
        REQUIRE(r.run.steps_done == 4);
        REQUIRE(r.run.epochs.size() == 4);
        CHECK(r.run.epochs[0] == 0xfffffffeu);
        CHECK(r.run.epochs[1] == 0xffffffffu);
        CHECK(r.run.epochs[2] == 1u);  // 0 is skipped: it is the tag of memory never written
        CHECK(r.run.epochs[3] == 2u);
        for (int k = 0; k < 4; ++k) {
            StepInputs in = rotate_rows(p.input, k);
            CHECK(first_different(r.run.outputs[size_t(k)], ref::run<float>(in, p.plan.reduction_order())) == "");
        }
        // consecutive steps carry different values, so a stale read would show in the results too
        CHECK(first_different(r.run.outputs[0], r.run.outputs[1]) != "");
    }
}

TEST_CASE("other CTA counts and fixture shapes") {
    struct Case { const char* what; int R, L, nb; bool bw; ConvLayout lay; int nulls; int blocks; };
    const Case cases[] = {
        {"17 CTAs (one gemv CTA)", 2, 4, 4, false, ConvLayout::sd, 0, 17},
        {"40 CTAs", 2, 4, 4, false, ConvLayout::sd, 0, 40},
        {"block-write layer", 2, 4, 3, true, ConvLayout::sd, 0, 0},
        {"ds conv layout", 2, 4, 4, false, ConvLayout::ds, 0, 0},
        {"a null request", 3, 3, 2, false, ConvLayout::sd, 1, 0},
        {"plain decode (L = 1)", 4, 1, 1, false, ConvLayout::sd, 0, 0},
        {"nb = 8, S = 20 (more rows than slices)", 4, 5, 8, false, ConvLayout::sd, 0, 0},
    };
    for (const Case& k : cases) {
        Config c = Config::preset("small");
        c.R = k.R; c.L = k.L; c.nb = k.nb; c.block_write = k.bw; c.conv_layout = k.lay;
        FixtureOptions fo;
        fo.null_requests = k.nulls;
        StepInputs in = make_fixture(c, fo);
        PlanParams pp = PlanPolicy::defaults_for(in.cfg);
        if (k.blocks) pp.blocks = k.blocks;
        passes_bit_for_bit(Plan::build(in.cfg, pp), in, {3, 4}, k.what);
    }
}

TEST_CASE("attn row parts: a slice's rows over 2 or 3 CTAs give the same bits; the x faults name the part's flag") {
    struct Case { const char* what; int R, L, nb; bool bw; int nulls; };
    const Case cases[] = {
        {"the small step", 2, 4, 4, false, 0},
        {"block-write, nb = 7, 5 rows (parts of 2 and 3 rows)", 5, 1, 7, true, 0},
        {"a null request", 3, 3, 2, false, 1},
    };
    for (const Case& k : cases)
        for (int parts : {2, 3})
            for (bool every : {false, true}) {
                Config c = Config::preset("small");
                c.R = k.R; c.L = k.L; c.nb = k.nb; c.block_write = k.bw;
                FixtureOptions fo;
                fo.null_requests = k.nulls;
                StepInputs in = make_fixture(c, fo);
                PlanParams pp = PlanPolicy::defaults_for(in.cfg);
                pp.blocks = 16 * parts + 8, pp.attn_row_parts = parts, pp.gemv_every_cta = every;
                passes_bit_for_bit(Plan::build(in.cfg, pp), in, {5, 6},
                                   std::string(k.what) + ", " + std::to_string(parts) + " parts" + (every ? ", bands over every CTA" : ""));
            }
    // the part of CTA 1 (slice 1, rows 0..3 of 8) stores its flag before its x: a gemv CTA reads
    // that part's x; and a gemv CTA that reads x before the flags reads a part not yet stored
    StepInputs in = make_fixture(Config::preset("small"));
    PlanParams pp = PlanPolicy::defaults_for(in.cfg);
    pp.blocks = 40, pp.attn_row_parts = 2;
    Plan plan = Plan::build(in.cfg, pp);
    for (Fault f : {Fault::flag_before_data, Fault::x_before_flag, Fault::missing_xrdy}) {
        MachineOptions mo;
        mo.fault = f;
        mo.schedule.kind = Schedule::random;
        mo.schedule.seed = 2;
        MachineResult r = run_machine(plan, in, mo);
        INFO(to_string(f), ": ", r.detail);
        if (f == Fault::flag_before_data) {
            CHECK(r.verdict == Verdict::VISIBILITY_FAULT);
            CHECK(r.entry == plan.xrdy(1, 0));
            CHECK(contains(r.detail, "XRDY[slice 1][rows 0..3]"));
        } else if (f == Fault::x_before_flag) {
            CHECK(r.verdict == Verdict::VISIBILITY_FAULT);
            CHECK(r.entry == plan.xrdy(0, 0));  // row 0's part
            REQUIRE(!r.named.empty());
            CHECK(r.named[0] == plan.n_attn_ctas());  // the first gemv CTA, past the 32 attn CTAs
        } else {
            CHECK(r.verdict == Verdict::LIVELOCK);
            CHECK(r.entry == plan.xrdy(1, 0));
        }
    }
}

TEST_CASE("residency: the plan's minimum passes, one fewer deadlocks, as the static check says") {
    Prepared& p = small_prepared();
    const int need = p.plan.min_residency();
    REQUIRE(need > p.plan.n_attn_ctas());  // every attn CTA waits for every slice, and kda tasks for gemv groups
    REQUIRE(need <= p.plan.blocks());
    for (int res : {need, need + 1, p.plan.blocks()}) {
        if (res > p.plan.blocks()) continue;
        EmulateOptions o = small_options();
        o.resident = res;
        for (uint64_t seed : {1ull, 2ull, 3ull}) {
            o.schedule.seed = seed;
            EmulateResult r = emulate(p, o);
            INFO("resident ", res, "\n", r.report);
            CHECK(r.verdict == Verdict::PASS);
        }
    }
    EmulateOptions o = small_options();
    o.resident = need - 1;
    EmulateResult r = emulate(p, o);
    INFO(r.report);
    CHECK(r.verdict == Verdict::DEADLOCK);
    CHECK(contains(r.run.detail, "is not resident"));
}

TEST_CASE("a run's steps share step 0's inputs: rows of another shape or too few are bad input, none is a plain launch") {
    Prepared& p = small_prepared();
    StepRows bad = step_rows(p.input, 1);
    REQUIRE(!bad.prefix.empty());
    bad.delta.pop_back();
    CHECK_THROWS_AS(run_machine(p.plan, p.input, std::vector<StepRows>{StepRows{}, bad}, 2, MachineOptions{}), BadInput);
    CHECK_THROWS_AS(run_machine(p.plan, p.input, std::vector<StepRows>{StepRows{}}, 0, MachineOptions{}), BadInput);
    CHECK_THROWS_AS(run_machine(p.plan, p.input, std::vector<StepRows>{StepRows{}}, 2, MachineOptions{}), BadInput);
    // rows past the launches asked for are not read (nor checked)
    CHECK(run_machine(p.plan, p.input, std::vector<StepRows>{StepRows{}, bad}, 1, MachineOptions{}).verdict == Verdict::PASS);
    CHECK(step_rows(p.input, p.input.cfg.S()).prefix.empty());  // a whole turn: step 0's own rows
    const MachineResult one = run_machine(p.plan, p.input, MachineOptions{});
    REQUIRE(one.verdict == Verdict::PASS);
    CHECK(first_different(one.outputs[0], p.refs[0]) == "");
}
