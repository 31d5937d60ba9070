// 500 random and PCT schedules of the small preset, with and without the AMD knob and over several
// steps: the clean plan is never flagged and always computes the reference in the plan's order.
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <mutex>

#include "emu_util.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

TEST_CASE("500 random and PCT schedules of the small preset: no false alarm") {
    Prepared& p = small_prepared();
    const int n = 500;
    std::vector<std::string> fails;
    std::mutex mu;
    std::atomic<int64_t> total_steps{0};
    std::map<int, int> pct_depths;
#pragma omp parallel for schedule(dynamic, 4)
    for (int i = 0; i < n; ++i) {
        EmulateOptions o = small_options();
        o.schedule.kind = i % 2 ? Schedule::pct : Schedule::random;
        o.schedule.pct_depth = 1 + (i / 2) % 5;  // PCT depths 1..5
        o.schedule.seed = 1000 + uint64_t(i);
        o.amd = i % 3 == 0;
        o.steps = i % 5 == 0 ? 3 : 1;
        o.resident = i % 7 == 0 ? p.plan.min_residency() : 0;
        EmulateResult r = emulate(p, o);
        total_steps += r.run.sched_steps;
        std::string bad;
        if (r.verdict != Verdict::PASS) bad = r.token + " -> " + to_string(r.verdict) + ": " + r.run.detail;
        for (int k = 0; bad.empty() && k < r.run.steps_done; ++k)
            if (first_different(r.run.outputs[size_t(k)], p.refs[size_t(k)]) != "") bad = r.token + " -> outputs differ";
        if (!bad.empty()) {
            std::lock_guard<std::mutex> lock(mu);
            fails.push_back(bad);
        }
    }
    for (const auto& f : fails) MESSAGE(f);
    CHECK(fails.empty());
    CHECK(total_steps.load() > int64_t(n) * 1000);  // the runs really ran
}

TEST_CASE("100 schedules of the small preset with its in_proj bands over every CTA: no false alarm") {
    Prepared& base = small_prepared();
    Prepared p = prepare(small_options(), 1);
    PlanParams pp = p.plan.params();
    pp.gemv_every_cta = true;
    p.plan = Plan::build(p.plan.config(), pp);  // the references do not depend on who runs a group
    REQUIRE(p.plan.gemv_cta(p.plan.n_groups() - 1) < p.plan.n_attn_ctas());
    std::vector<std::string> fails;
    std::mutex mu;
#pragma omp parallel for schedule(dynamic, 4)
    for (int i = 0; i < 100; ++i) {
        EmulateOptions o = small_options();
        o.schedule.kind = i % 2 ? Schedule::pct : Schedule::random;
        o.schedule.seed = 5000 + uint64_t(i);
        o.amd = i % 3 == 0;
        o.kda_teams = i % 4 < 2 ? 1 : 2;
        EmulateResult r = emulate(p, o);
        std::string bad;
        if (r.verdict != Verdict::PASS) bad = r.token + " -> " + to_string(r.verdict) + ": " + r.run.detail;
        else if (first_different(r.run.outputs[0], base.refs[0]) != "") bad = r.token + " -> outputs differ";
        if (!bad.empty()) {
            std::lock_guard<std::mutex> lock(mu);
            fails.push_back(bad);
        }
    }
    for (const auto& f : fails) MESSAGE(f);
    CHECK(fails.empty());
}

TEST_CASE("different seeds give different interleavings (the scheduler is not a no-op)") {
    Prepared& p = small_prepared();
    std::vector<std::vector<int32_t>> orders;
    for (const char* s : {"random", "pct"})
        for (uint64_t seed : {1ull, 2ull}) {
            EmulateOptions o = small_options();
            o.schedule = Schedule::parse(s);
            o.schedule.seed = seed;
            EmulateResult r = emulate(p, o);
            REQUIRE(r.verdict == Verdict::PASS);
            std::vector<int32_t> who;
            for (const Event& e : r.run.history)
                if (e.kind == EventKind::finish) who.push_back(e.cta);
            orders.push_back(who);
        }
    for (size_t i = 0; i < orders.size(); ++i)
        for (size_t j = i + 1; j < orders.size(); ++j) CHECK(orders[i] != orders[j]);
}
