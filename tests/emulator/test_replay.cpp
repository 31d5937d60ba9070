// A run is a function of its token: replaying the printed token reproduces the verdict and the
// whole history, event for event; malformed tokens are bad input.
#include <doctest/doctest.h>

#include "emu_util.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

namespace {

bool same_history(const MachineResult& a, const MachineResult& b) {
    if (a.history.size() != b.history.size()) return false;
    for (size_t i = 0; i < a.history.size(); ++i) {
        const Event &x = a.history[i], &y = b.history[i];
        if (x.tick != y.tick || x.cta != y.cta || x.instr != y.instr || x.kind != y.kind || !(x.entry == y.entry) ||
            x.tag != y.tag || x.aux != y.aux || x.step != y.step)
            return false;
    }
    return true;
}

// o's token starts with `version`, reads back to the same token, and replays o's run (a PASS) step for step
EmulateOptions round_trip(Prepared& prep, const EmulateOptions& o, const char* version) {
    const std::string t = make_token(o);
    INFO(t);
    CHECK(t.rfind(version, 0) == 0);
    const EmulateOptions back = apply_token(small_options(), t);
    CHECK(make_token(back) == t);
    EmulateResult first = emulate(prep, o), second = emulate(prep, back);
    CHECK(first.verdict == Verdict::PASS);
    CHECK(same_history(first.run, second.run));
    return back;
}

}  // namespace

TEST_CASE("replaying a token reproduces the verdict and the history, passing or failing") {
    Prepared& p = small_prepared();
    struct Case { const char* sched; uint64_t seed; Fault fault; int steps; bool amd; };
    const Case cases[] = {{"random", 42, Fault::none, 1, false},     {"pct:4", 7, Fault::none, 3, true},
                          {"pct", 9, Fault::missing_xrdy, 1, false},  {"random", 5, Fault::flag_before_data, 1, false},
                          {"delay:gemv", 3, Fault::epoch_by_value, 2, false}, {"rr", 1, Fault::too_few_resident, 1, false}};
    for (const Case& c : cases) {
        EmulateOptions o = small_options();
        o.schedule = Schedule::parse(c.sched);
        o.schedule.seed = c.seed;
        o.fault = c.fault;
        o.steps = c.steps;
        o.amd = c.amd;
        EmulateResult first = emulate(p, o);
        EmulateOptions again = apply_token(small_options(), first.token);
        CHECK(make_token(again) == first.token);
        EmulateResult second = emulate(p, again);
        INFO(first.token);
        CHECK(second.verdict == first.verdict);
        CHECK(second.run.detail == first.run.detail);
        CHECK(second.run.sched_steps == first.run.sched_steps);
        CHECK(same_history(first.run, second.run));
        CHECK(first.run.history.size() > 100);
        // the report prints the token and the failure history
        CHECK(contains(first.report, "--replay " + first.token));
        if (first.verdict != Verdict::PASS) CHECK(contains(first.report, "history (last"));
    }
}

TEST_CASE("the gemv bands choice travels in a v3 token, with the kda teams") {
    Prepared& p = small_prepared();
    Prepared every = prepare([] { EmulateOptions o = small_options(); o.gemv_bands = GemvBands::every; return o; }(), 1);
    REQUIRE(every.plan.params().gemv_every_cta);
    REQUIRE(!p.plan.params().gemv_every_cta);  // the small preset's default: SPEC §4's layout
    for (int teams : {1, 2})
        for (GemvBands bands : {GemvBands::spec, GemvBands::every}) {
            const int g = bands == GemvBands::every;
            EmulateOptions o = small_options();
            o.kda_teams = teams;
            o.gemv_bands = bands;
            o.schedule = Schedule::parse("pct");
            o.schedule.seed = 11;
            CHECK(contains(make_token(o), "/t" + std::to_string(teams) + "/g" + std::to_string(g) + "/small."));
            const EmulateOptions back = round_trip(g ? every : p, o, "v3/");
            CHECK(back.gemv_bands == bands);
            CHECK(back.kda_teams == teams);
        }
    // a v1 or v2 token leaves the choice to the plan
    EmulateOptions o = small_options();
    o.gemv_bands = GemvBands::every;
    CHECK(apply_token(o, "v1/random/1/r0/k1/a0/none/b0/small.R2.L4.nb4.s1").gemv_bands == GemvBands::by_plan);
    CHECK(apply_token(o, "v2/random/1/r0/k1/a0/none/b0/t2/small.R2.L4.nb4.s1").gemv_bands == GemvBands::by_plan);
}

TEST_CASE("g2's second pass travels in a v4 token, with the bands choice (ga: the plan's) and the kda teams") {
    Prepared& p = small_prepared();
    EmulateOptions base = small_options();
    base.g2_last = 6;  // the small preset: 8 CTAs past its 16 attn CTAs
    Prepared g2 = prepare(base, 1);
    REQUIRE(g2.plan.params().g2_last_ctas == 6);
    REQUIRE(p.plan.params().g2_last_ctas == 0);
    for (int teams : {1, 2})
        for (GemvBands bands : {GemvBands::by_plan, GemvBands::spec}) {
            EmulateOptions o = base;
            o.kda_teams = teams;
            o.gemv_bands = bands;
            o.schedule = Schedule::parse("pct");
            o.schedule.seed = 5;
            CHECK(contains(make_token(o), "/t" + std::to_string(teams) + (bands == GemvBands::spec ? "/g0" : "/ga") + "/h6/small."));
            const EmulateOptions back = round_trip(g2, o, "v4/");
            CHECK(back.g2_last == 6);
            CHECK(back.gemv_bands == bands);
            CHECK(back.kda_teams == teams);
        }
    // older tokens leave the choice to the plan
    CHECK(apply_token(base, "v3/random/1/r0/k1/a0/none/b0/t1/g0/small.R2.L4.nb4.s1").g2_last == -1);
    CHECK(apply_token(base, "v1/random/1/r0/k1/a0/none/b0/small.R2.L4.nb4.s1").g2_last == -1);
}

TEST_CASE("the history names CTA, role, stage and mailbox entry, one line per event") {
    Prepared& p = small_prepared();
    EmulateOptions o = small_options();
    o.fault = Fault::missing_xrdy;
    EmulateResult r = emulate(p, o);
    const std::string h = format_history(r.plan, r.run, 1000000);
    CHECK(contains(h, "CTA 1 attn ATTN_X(slice 1): finish"));
    CHECK(contains(h, "gemv GEMV_GROUP(group 0): spin on XRDY[slice 1] (sees tag 0)"));
    CHECK(contains(h, "attn ATTN_PART(slice 0): store PART[row 0][src 0][slice 0] tag 1 (value+tag"));
    CHECK(contains(h, ": acquire XRDY[slice 0] (tag 1)"));
    CHECK(contains(h, "store XRDY[slice 0] tag 1 (release"));
}

TEST_CASE("malformed replay tokens are bad input") {
    for (const char* t : {"", "v2/random/1/r0/k1/a0/none/b0/small.R2.L4.nb4.s1", "v1/random/1/r0/k1/a0/none/b0",
                          "v1/chaos/1/r0/k1/a0/none/b0/small.R2.L4.nb4.s1", "v1/random/x/r0/k1/a0/none/b0/small.R2.L4.nb4.s1",
                          "v1/random/1/q0/k1/a0/none/b0/small.R2.L4.nb4.s1", "v1/random/1/r0/k0/a0/none/b0/small.R2.L4.nb4.s1",
                          "v1/random/1/r0/k1/a2/none/b0/small.R2.L4.nb4.s1", "v1/random/1/r0/k1/a0/bogus/b0/small.R2.L4.nb4.s1",
                          "v1/random/1/r0/k1/a0/none/b0/small.R2.L4", "v1/random/1/r0/k1/a0/none/b0/file",
                          "v1/random/-1/r0/k1/a0/none/b0/small.R2.L4.nb4.s1",
                          "v3/random/1/r0/k1/a0/none/b0/t1/g2/small.R2.L4.nb4.s1",
                          "v3/random/1/r0/k1/a0/none/b0/t1/small.R2.L4.nb4.s1",
                          "v3/random/1/r0/k1/a0/none/b0/g1/t1/small.R2.L4.nb4.s1",
                          "v3/random/1/r0/k1/a0/none/b0/t0/g1/small.R2.L4.nb4.s1",
                          "v4/random/1/r0/k1/a0/none/b0/t1/ga/small.R2.L4.nb4.s1",
                          "v4/random/1/r0/k1/a0/none/b0/t1/ga/x6/small.R2.L4.nb4.s1",
                          "v4/random/1/r0/k1/a0/none/b0/t1/gb/h6/small.R2.L4.nb4.s1",
                          "v4/random/1/r0/k1/a0/none/b0/t1/ga/h-1/small.R2.L4.nb4.s1"}) {
        INFO(t);
        CHECK_THROWS_AS(apply_token(small_options(), t), BadInput);
    }
}
