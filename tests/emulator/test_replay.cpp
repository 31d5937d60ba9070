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

TEST_CASE("the gemv bands choice and the kda teams travel in the token, by name") {
    Prepared& p = small_prepared();
    Prepared every = prepare([] { EmulateOptions o = small_options(); o.gemv_bands = GemvBands::every; return o; }(), 1);
    REQUIRE(every.plan.params().gemv_every_cta);
    REQUIRE(!p.plan.params().gemv_every_cta);  // the small preset's default: SPEC §4's layout
    for (int teams : {1, 2})
        for (GemvBands bands : {GemvBands::spec, GemvBands::every}) {
            EmulateOptions o = small_options();
            o.kda_teams = teams;
            o.gemv_bands = bands;
            o.schedule = Schedule::parse("pct");
            o.schedule.seed = 11;
            const std::string t = make_token(o);
            CHECK(contains(t, std::string(",gemv-bands=") + (bands == GemvBands::every ? "every" : "spec") + ","));
            CHECK(contains(t, ",kda-teams=" + std::to_string(teams) + ","));
            const EmulateOptions back = round_trip(bands == GemvBands::every ? every : p, o, "v5,");
            CHECK(back.gemv_bands == bands);
            CHECK(back.kda_teams == teams);
        }
}

TEST_CASE("the token names every field; an omitted field takes its option's default, in any order") {
    EmulateOptions o = small_options();
    o.schedule = Schedule::parse("delay:cta:3");
    o.schedule.seed = 77;
    o.fault = Fault::stale_epoch_tag;
    o.steps = 3;
    o.amd = true;
    o.resident = 20;
    o.detectors = DetectorSet{}.without(Detector::result).without(Detector::write_conflict);
    CHECK(make_token(o) == "v5,config=small,R=2,L=4,nb=4,fixture-seed=1,blocks=0,gemv-bands=auto,kda-teams=1,"
                           "schedule=delay:cta:3,seed=77,resident=20,steps=3,amd=1,inject=stale_epoch_tag,"
                           "detectors-off=write_conflict+result");
    // the same run, its fields shuffled and the defaults left out
    const EmulateOptions back = apply_token(EmulateOptions{}, "v5,inject=stale_epoch_tag,amd=1,steps=3,resident=20,"
                                                              "detectors-off=result+write_conflict,seed=77,"
                                                              "schedule=delay:cta:3,config=small");
    CHECK(make_token(back) == make_token(o));
    // every choice comes from the token: the caller's choices do not leak through
    EmulateOptions busy = o;
    busy.kda_teams = 2;
    busy.gemv_bands = GemvBands::every;
    CHECK(make_token(apply_token(busy, "v5")) == make_token(EmulateOptions{}));
    // a fixture file: the token says so, and replaying it needs the file again
    EmulateOptions f = small_options();
    f.fixture.file = "/some/step.safetensors";
    const std::string ft = make_token(f);
    CHECK(ft.rfind("v5,fixture=file,blocks=0,", 0) == 0);
    CHECK(!contains(ft, "config="));
    CHECK(apply_token(f, ft).fixture.file == "/some/step.safetensors");
    CHECK_THROWS_AS(apply_token(small_options(), ft), BadInput);
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

TEST_CASE("malformed replay tokens are bad input, naming what is wrong") {
    struct Bad { const char* token; const char* says; };
    for (const Bad b : {Bad{"", "must start with v5"}, Bad{"v6,seed=1", "must start with v5"},
                        Bad{"v5,seed", "is not NAME=VALUE"}, Bad{"v5,=3", "is not NAME=VALUE"},
                        Bad{"v5,seed=1,seed=2", "seed appears twice"}, Bad{"v5,speed=1", "unknown field 'speed'"},
                        Bad{"v5,seed=x", "seed must be a number"}, Bad{"v5,seed=-1", "seed must be a number"},
                        Bad{"v5,steps=0", "steps must be 1..64"}, Bad{"v5,steps=65", "steps must be 1..64"},
                        Bad{"v5,amd=2", "amd must be 0..1"}, Bad{"v5,kda-teams=0", "kda-teams must be 1..8"},
                        Bad{"v5,nb=9", "nb must be 1..8"}, Bad{"v5,R=0", "R must be 1..4096"},
                        Bad{"v5,schedule=chaos", "schedule"}, Bad{"v5,inject=bogus", "unknown fault 'bogus'"},
                        Bad{"v5,detectors-off=sanity", "unknown detector 'sanity'"},
                        Bad{"v5,detectors-off=result+result", "detector 'result' is named twice"},
                        Bad{"v5,gemv-bands=all", "--gemv-bands must be auto, spec or every"},
                        Bad{"v5,fixture=mine.safetensors", "fixture must be 'file'"},
                        Bad{"v5,fixture=file,L=2", "contradicts the built-in fixture field L"},
                        Bad{"v5,fixture=file", "give the FIXTURE argument too"},
                        // the positional formats of earlier versions: refused, their fields spelt out
                        Bad{"v1/random/1/r0/k1/a0/none/b0/small.R2.L4.nb4.s1", "positional format"},
                        Bad{"v4/random/1/r0/k1/a0/none/b0/t1/ga/h6/small.R2.L4.nb4.s1", "v1/SCHEDULE/SEED/rRESIDENT"}}) {
        INFO(b.token);
        try {
            apply_token(small_options(), b.token);
            FAIL("accepted");
        } catch (const BadInput& e) {
            CHECK(contains(e.what(), b.says));
        }
    }
}
