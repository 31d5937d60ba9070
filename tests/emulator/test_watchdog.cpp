// The watchdog's other two findings: a circular wait between CTAs (DEADLOCK, the chain closes a
// cycle) and a run whose CTAs keep stepping without progress (LIVELOCK by the step budget).
#include <doctest/doctest.h>

#include "core/fixture_gen.hpp"
#include "emu_util.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

TEST_CASE("sibling kda chunks queued behind each other's siblings: DEADLOCK with the cycle named") {
    Prepared& p = small_prepared();
    Plan q = p.plan;
    const int a = q.kda_cta(0, 0, 0), b = q.kda_cta(0, 1, 0);
    REQUIRE(move_kda_task(q, 0, 1, 1, a) == 4);  // CTA a: task (0,0,0), then (0,1,1)
    REQUIRE(move_kda_task(q, 0, 0, 1, b) == 4);  // CTA b: task (0,1,0), then (0,0,1)
    for (uint64_t seed : {1ull, 2ull, 3ull}) {
        MachineOptions mo;
        mo.schedule.seed = seed;
        MachineResult r = run_machine(q, p.input, mo);
        INFO(r.detail);
        CHECK(r.verdict == Verdict::DEADLOCK);
        CHECK(contains(r.detail, "the wait closes a cycle"));
        CHECK(std::find(r.named.begin(), r.named.end(), a) != r.named.end());
        CHECK(std::find(r.named.begin(), r.named.end(), b) != r.named.end());
    }
}

TEST_CASE("no progress within the step budget: LIVELOCK") {
    Prepared& p = small_prepared();
    MachineOptions mo;
    mo.watchdog_steps = 5;  // far below what one wait of the clean plan takes under PCT
    mo.schedule = Schedule::parse("pct");
    MachineResult r = run_machine(p.plan, p.input, mo);
    CHECK(r.verdict == Verdict::LIVELOCK);
    CHECK(contains(r.detail, "no CTA completed a wait or an instruction in 5 scheduler steps"));
    mo.watchdog_steps = 2000000;
    CHECK(run_machine(p.plan, p.input, mo).verdict == Verdict::PASS);
}
