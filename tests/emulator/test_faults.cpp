// Every planted fault is caught under every schedule tried, with the verdict it deserves and a
// report naming the right CTA and mailbox entry (checked against the plan, not against the report).
#include <doctest/doctest.h>

#include "emu_util.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

namespace {

std::vector<Schedule> schedules() {
    std::vector<Schedule> s;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        Schedule r = Schedule::parse("random");
        r.seed = seed;
        s.push_back(r);
        Schedule p = Schedule::parse("pct");
        p.seed = seed;
        s.push_back(p);
    }
    s.push_back(Schedule::parse("rr"));
    s.push_back(Schedule::parse("delay:attn"));
    s.push_back(Schedule::parse("delay:gemv"));
    s.push_back(Schedule::parse("delay:kda"));
    return s;
}

bool named(const EmulateResult& r, int cta) {
    return std::find(r.run.named.begin(), r.run.named.end(), cta) != r.run.named.end();
}

// Runs the fault under every schedule; `check` sees each result.
template <class F>
void each_schedule(Fault fault, F&& check) {
    Prepared& p = small_prepared();
    for (const Schedule& s : schedules()) {
        EmulateOptions o = small_options();
        o.fault = fault;
        o.schedule = s;
        EmulateResult r = emulate(p, o);
        INFO(std::string(to_string(fault)), " under ", s.str(), " seed ", s.seed, "\n", r.report);
        check(r, p.plan);
    }
}

}  // namespace

TEST_CASE("the fault list has at least the ten the issue names, each with a description") {
    CHECK(fault_list().size() >= 10);
    for (const auto& f : fault_list()) {
        CHECK(parse_fault(f.name) == f.fault);
        CHECK(std::string(f.what).size() > 10);
    }
    CHECK_THROWS_AS(parse_fault("no_such_fault"), BadInput);
}

TEST_CASE("missing XRDY store: LIVELOCK, chain ends at CTA 1 which passed ATTN_X without storing") {
    each_schedule(Fault::missing_xrdy, [](const EmulateResult& r, const Plan& plan) {
        CHECK(r.verdict == Verdict::LIVELOCK);
        CHECK(r.run.entry == plan.xrdy(1, 0));
        CHECK(plan.producer(plan.xrdy(1, 0)).cta == 1);
        CHECK(named(r, 1));
        CHECK(contains(r.run.detail, "waits for XRDY[slice 1]"));
        CHECK(contains(r.run.detail, "its producer CTA 1 (attn) ATTN_X(slice 1) has"));
        CHECK(contains(r.run.detail, "never stored it in this step (lost store)"));
    });
}

TEST_CASE("flag stored before data without ordering: VISIBILITY_FAULT on XRDY[slice 1] from CTA 1") {
    each_schedule(Fault::flag_before_data, [](const EmulateResult& r, const Plan& plan) {
        CHECK(r.verdict == Verdict::VISIBILITY_FAULT);
        CHECK(r.run.entry == plan.xrdy(1, 0));
        CHECK(named(r, 1));
        REQUIRE(!r.run.named.empty());
        CHECK(r.run.named[0] >= plan.n_attn_ctas());  // the reader is a gemv CTA
        CHECK(contains(r.run.detail, "stored in this step by CTA 1 (attn) ATTN_X(slice 1)"));
        CHECK(contains(r.run.detail, "acquired XRDY[slice 1], but that flag was not stored with release"));
    });
}

TEST_CASE("stale epoch tag: LIVELOCK naming WGT[row 0], its producer CTA 0 and the wrong epoch") {
    each_schedule(Fault::stale_epoch_tag, [](const EmulateResult& r, const Plan& plan) {
        CHECK(r.verdict == Verdict::LIVELOCK);
        CHECK(r.run.entry == plan.wgt(0));
        CHECK(plan.producer(plan.wgt(0)).cta == 0);
        CHECK(named(r, 0));
        CHECK(contains(r.run.detail, "CTA 0 (attn) ATTN_GATE(row 0) has passed that instruction and stored it with tag"));
        CHECK(contains(r.run.detail, "(wrong epoch)"));
    });
}

TEST_CASE("epoch captured by value in a graph replay: STALE_READ in step 1, naming the entry's producer") {
    each_schedule(Fault::epoch_by_value, [](const EmulateResult& r, const Plan& plan) {
        CHECK(r.verdict == Verdict::STALE_READ);
        CHECK(r.steps == 2);
        REQUIRE(r.run.entry.box != Mailbox::count);
        const int producer = plan.producer(r.run.entry).cta;
        CHECK(named(r, producer));
        CHECK(contains(r.run.detail, plan.entry_name(r.run.entry)));
        CHECK(contains(r.run.detail, "stored in step 0"));
        CHECK(r.run.steps_done == 1);  // caught in the second launch
    });
}

TEST_CASE("off-by-one slice ownership: WRITE_CONFLICT on slice 2's partials, naming CTAs 1 and 2") {
    each_schedule(Fault::slice_off_by_one, [](const EmulateResult& r, const Plan& plan) {
        CHECK(r.verdict == Verdict::WRITE_CONFLICT);
        CHECK(r.run.entry == plan.part(0, 0, 2));
        CHECK(named(r, 1));
        CHECK(named(r, 2));
        CHECK(contains(r.run.detail, "PART[row 0][src 0][slice 2] is stored twice"));
        // the static check sees it too
        bool two = false;
        for (const auto& s : r.plan.structural_problems()) two |= contains(s, "has two producers");
        CHECK(two);
    });
}

TEST_CASE("a gemv group reading x before its flag: VISIBILITY_FAULT by the first gemv CTA on XRDY[slice 0]") {
    each_schedule(Fault::x_before_flag, [](const EmulateResult& r, const Plan& plan) {
        CHECK(r.verdict == Verdict::VISIBILITY_FAULT);
        CHECK(r.run.entry == plan.xrdy(0, 0));
        REQUIRE(!r.run.named.empty());
        CHECK(r.run.named[0] == plan.n_attn_ctas());
        CHECK(named(r, plan.producer(plan.xrdy(0, 0)).cta));
        CHECK(contains(r.run.detail, "CTA " + std::to_string(plan.n_attn_ctas()) + " (gemv) GEMV_GROUP"));
        CHECK(contains(r.run.detail, "XRDY[slice 0]"));
    });
}

TEST_CASE("a kda task skipping its PROJ wait: VISIBILITY_FAULT by its CTA on PROJ[group 0]") {
    each_schedule(Fault::kda_skips_proj_wait, [](const EmulateResult& r, const Plan& plan) {
        CHECK(r.verdict == Verdict::VISIBILITY_FAULT);
        CHECK(r.run.entry == plan.proj(0));
        REQUIRE(!r.run.named.empty());
        CHECK(r.run.named[0] == plan.kda_cta(0, 0, 0));
        CHECK(named(r, plan.producer(plan.proj(0)).cta));
        CHECK(contains(r.run.detail, "KDA_CONV(r 0, h 0, chunk 0) read proj[row 0]"));
        CHECK(contains(r.run.detail, "PROJ[group 0]"));
    });
}

TEST_CASE("a partial counted twice: WRONG_SPLIT at CTA 0's gate of row 0") {
    each_schedule(Fault::partial_counted_twice, [](const EmulateResult& r, const Plan& plan) {
        CHECK(r.verdict == Verdict::WRONG_SPLIT);
        CHECK(r.run.named == std::vector<int>{0});
        CHECK(r.run.entry == plan.part(0, 0, 0));
        CHECK(contains(r.run.detail, "CTA 0 (attn) ATTN_GATE(row 0)"));
        CHECK(contains(r.run.detail, "PART[row 0][src 0][slice 0] counted 2 times"));
        CHECK(contains(r.run.detail, "missing PART[row 0][src 0][slice 1]"));
    });
}

TEST_CASE("too few resident CTAs: DEADLOCK, the chain ends at a CTA that is not resident") {
    each_schedule(Fault::too_few_resident, [](const EmulateResult& r, const Plan& plan) {
        CHECK(r.verdict == Verdict::DEADLOCK);
        CHECK(r.resident == plan.min_residency() - 1);
        CHECK(contains(r.run.detail, "is not resident"));
        REQUIRE(r.run.entry.box != Mailbox::count);
        CHECK(plan.launch_cta_of(plan.producer(r.run.entry).cta) >= r.resident);  // the awaited producer never got a place
        CHECK(named(r, plan.producer(r.run.entry).cta));
    });
}

TEST_CASE("a poll behind another task's weight loads: POLL_BEHIND_LOADS with the AMD knob, fine without") {
    each_schedule(Fault::poll_behind_loads, [](const EmulateResult& r, const Plan& plan) {
        CHECK(r.verdict == Verdict::POLL_BEHIND_LOADS);
        CHECK(r.run.named == std::vector<int>{plan.n_attn_ctas()});
        CHECK(r.run.entry == plan.xrdy(0, 0));
        CHECK(contains(r.run.detail, "GEMV_GROUP(group 0) polls XRDY[slice 0]"));
        int second = 1;  // the first gemv CTA's second group, whose prefetch now precedes the poll
        while (plan.gemv_cta(second) != plan.n_attn_ctas()) ++second;
        CHECK(contains(r.run.detail, "GEMV_PREFETCH(group " + std::to_string(second)));
    });
    // the same prefetch order is harmless where a poll does not wait for earlier loads (NVIDIA)
    Prepared& p = small_prepared();
    Plan faulty = apply_plan_fault(p.plan, Fault::poll_behind_loads);
    for (uint64_t seed : {1ull, 2ull, 3ull}) {
        MachineOptions mo;
        mo.schedule.seed = seed;
        MachineResult r = run_machine(faulty, p.input, mo);
        INFO(r.detail);
        REQUIRE(r.verdict == Verdict::PASS);  // a failing run has no outputs to compare
        CHECK(first_different(r.outputs[0], p.refs[0]) == "");
    }
}

TEST_CASE("a wrong num_accepted window: WRONG_RESULT naming request 0's kda CTA and its QK entry") {
    each_schedule(Fault::wrong_accepted_window, [](const EmulateResult& r, const Plan& plan) {
        CHECK(r.verdict == Verdict::WRONG_RESULT);
        REQUIRE(!r.run.named.empty());
        // the first wrong value is a conv output of request 0, head 0: task (0, 0, chunk) owns it
        bool owner = false;
        for (int c = 0; c < plan.n_chunks(); ++c) owner |= r.run.named[0] == plan.kda_cta(0, 0, c);
        CHECK(owner);
        CHECK(contains(r.run.detail, "qkv[row 0]"));
        CHECK(contains(r.run.detail, "KDA_CONV(r 0, h 0"));
        CHECK(contains(r.run.detail, "QK[r 0][h 0]"));
    });
}

TEST_CASE("a g1 share one column short: a read of the missing column names it, its QK entry and its producer") {
    each_schedule(Fault::g1_share_short, [](const EmulateResult& r, const Plan& plan) {
        REQUIRE(plan.n_chunks() > 1);
        // a sibling reads it after acquiring QK (STALE_READ) or the task itself reads it back without
        // having acquired its own QK (VISIBILITY_FAULT), whichever the schedule runs first
        CHECK((r.verdict == Verdict::STALE_READ || r.verdict == Verdict::VISIBILITY_FAULT));
        const int col = 2 * plan.qk_share() - 1;  // the last column of chunk 1's share of head 0
        CHECK(contains(r.run.detail, "g1[row 0][col " + std::to_string(col) + "]"));
        CHECK(contains(r.run.detail, "QK[r 0][h 0][chunk 1]"));
        CHECK(contains(r.run.detail, "KDA_CONV(r 0, h 0, chunk 1)"));
    });
}

TEST_CASE("an x store loop one column short: STALE_READ after XRDY[slice 1], naming CTA 1") {
    each_schedule(Fault::x_store_off_by_one, [](const EmulateResult& r, const Plan& plan) {
        CHECK(r.verdict == Verdict::STALE_READ);
        CHECK(r.run.entry == plan.xrdy(1, 0));
        CHECK(named(r, 1));
        const std::string col = "[col " + std::to_string(plan.params().slice_width) + "]";
        CHECK(contains(r.run.detail, "read x[row 0]" + col + " after acquiring XRDY[slice 1], but nothing stored it"));
        CHECK(contains(r.run.detail, "the plan's producer is CTA 1 (attn) ATTN_X(slice 1)"));
    });
}
