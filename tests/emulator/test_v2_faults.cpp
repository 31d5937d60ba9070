// Kernel v2's planted faults (emulator/faults.hpp, kernel 2): each is caught under every schedule
// tried by the one detector meant for it, with a report naming the role, the step and the buffer;
// with that detector off the same runs pass or end as another detector's verdict, never its own.
#include <doctest/doctest.h>

#include <set>

#include "emu_util.hpp"
#include "emulator/v2/emulate_v2.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

namespace {

const V2Prepared& small_v2() {
    static const V2Prepared p = [] {
        V2EmulateOptions o;
        o.fixture.preset = "small";
        return prepare_v2(o);
    }();
    return p;
}

std::vector<Schedule> schedules() {
    std::vector<Schedule> s;
    for (uint64_t seed = 1; seed <= 4; ++seed)
        for (const char* k : {"random", "pct"}) {
            Schedule x = Schedule::parse(k);
            x.seed = seed;
            s.push_back(x);
        }
    for (const char* k : {"rr", "delay:cta:0", "delay:cta:1"}) s.push_back(Schedule::parse(k));
    return s;
}

// the small fixture's plan with the tail
const V2Prepared& small_v2_tail() {
    static const V2Prepared p = [] {
        V2EmulateOptions o;
        o.fixture.preset = "small";
        o.tail = true;
        return prepare_v2(o);
    }();
    return p;
}

bool in_tail(Fault f) {
    return f == Fault::tail_word_unwaited || f == Fault::tail_stale_tag || f == Fault::tail_onrm_unwaited || f == Fault::tail_decay_unwaited;
}

V2EmulateResult run(Fault f, const Schedule& s, DetectorSet d = {}) {
    V2EmulateOptions o;
    o.fixture.preset = "small";
    o.fault = f;
    o.schedule = s;
    o.detectors = d;
    o.tail = in_tail(f);
    return emulate_v2(o.tail ? small_v2_tail() : small_v2(), o);
}

bool named(const V2EmulateResult& r, int p) { return std::find(r.run.named.begin(), r.run.named.end(), p) != r.run.named.end(); }

// Each schedule: caught by d with its verdict and "caught by: d", `check` on the report; with d off,
// another detector's verdict from `off`, or a pass.
template <class F>
void each_schedule(Fault f, Detector d, const std::set<Detector>& off, F&& check) {
    for (const Schedule& s : schedules()) {
        const V2EmulateResult on = run(f, s);
        INFO(std::string(to_string(f)), " under ", s.str(), " seed ", s.seed, "\n", on.report);
        CHECK(on.verdict == info(d).verdict);
        CHECK(on.run.detector == d);
        CHECK(contains(on.report, std::string("caught by: ") + to_string(d)));
        check(on);
        const V2EmulateResult without = run(f, s, DetectorSet{}.without(d));
        INFO("with ", std::string(to_string(d)), " off:\n", without.report);
        CHECK(without.run.detector != d);
        CHECK(off.count(without.run.detector) == 1);
        CHECK((without.run.detector == Detector::none) == (without.verdict == Verdict::PASS));
    }
}

}  // namespace

TEST_CASE("kernel v2's faults are in the catalogue, each one detector's, refused by the other kernel") {
    int v2 = 0;
    for (const FaultInfo& f : fault_list()) {
        if (f.kernel != 2) continue;
        ++v2;
        CHECK_THROWS_AS(FaultHooks{f.fault}.require_kernel(1), BadInput);
        FaultHooks{f.fault}.require_kernel(2);
        int sole = 0;
        for (const DetectorInfo& d : detector_list()) sole += d.sole == f.fault;
        // a dropped hand-off or words that never carry the step's tag are a hang, the deadlock detector's
        // (whose own fault is kernel v1's); the decays' wait is tail_landed's second (its own is the Σō²'s)
        CHECK(sole == (f.fault == Fault::seam_wgt_dropped || f.fault == Fault::tail_stale_tag || f.fault == Fault::tail_decay_unwaited ? 0 : 1));
    }
    CHECK(v2 == 11);
    CHECK_THROWS_AS(FaultHooks{Fault::missing_xrdy}.require_kernel(2), BadInput);
}

TEST_CASE("a ring slot refilled before its last consumer freed it: REUSE_BEFORE_FREE by ring_slot_free at CTA 0's copy") {
    const int depth = small_v2().plan.params().ring_depth;
    each_schedule(Fault::ring_refill_early, Detector::ring_slot_free, {Detector::none, Detector::deadlock, Detector::result},
                  [&](const V2EmulateResult& r) {
                      CHECK(named(r, PlanV2::proc(0, V2Role::producer)));
                      REQUIRE(r.run.named.size() == 2);
                      CHECK(PlanV2::proc_cta(r.run.named[1]) == 0);
                      CHECK(PlanV2::proc_role(r.run.named[1]) == V2Role::consumer);
                      CHECK(contains(r.run.detail, "producer COPY(chunk " + std::to_string(depth) + ") refills ring slot 0 of CTA 0"));
                      CHECK(contains(r.run.detail, "'s free of chunk 0 in it"));
                  });
}

TEST_CASE("a unit published before its last partial: VISIBILITY_FAULT by partials_landed at the owner's REDUCE") {
    each_schedule(Fault::publish_before_last_partial, Detector::partials_landed,
                  {Detector::none, Detector::result, Detector::recv_slot_free, Detector::deadlock}, [&](const V2EmulateResult& r) {
                      REQUIRE(r.run.named.size() == 2);
                      CHECK(r.run.named[0] == PlanV2::proc(0, V2Role::reducer));
                      CHECK(PlanV2::proc_role(r.run.named[1]) == V2Role::consumer);
                      CHECK(contains(r.run.detail, "reducer REDUCE(unit 0, rows 256..263, slot 0) sums rank "));
                      CHECK(contains(r.run.detail, "(the barrier was armed for 1792 bytes; the unit's 8 partials are 2048)"));
                      CHECK(contains(r.report, "plan checks: 1 problem(s); first: recv_bytes:"));  // the static check sees it too
                  });
}

TEST_CASE("a receive slot reused before its owner summed it: REUSE_BEFORE_FREE by recv_slot_free at CTA 1's send") {
    each_schedule(Fault::recv_slot_reused, Detector::recv_slot_free,
                  {Detector::none, Detector::partials_landed, Detector::result, Detector::deadlock}, [&](const V2EmulateResult& r) {
                      REQUIRE(r.run.named.size() == 2);
                      CHECK(r.run.named[0] == PlanV2::proc(1, V2Role::consumer, 0));
                      CHECK(PlanV2::proc_role(r.run.named[1]) == V2Role::reducer);
                      CHECK(contains(r.run.detail, "consumer 0 (tile 0, even k-steps) SEND(unit 2: rank 1 -> owner rank "));
                      CHECK(contains(r.run.detail, "whose use for unit 0 its owner has"));
                      CHECK(r.problems.empty());  // the plan is sound: the kernel's body skips the wait
                  });
}

TEST_CASE("a missing cluster barrier: VISIBILITY_FAULT by barrier_init at a peer's first touch of an owner's barrier") {
    each_schedule(Fault::missing_cluster_barrier, Detector::barrier_init, {Detector::none, Detector::deadlock, Detector::result},
                  [&](const V2EmulateResult& r) {
                      REQUIRE(!r.run.named.empty());
                      const int user = PlanV2::proc_cta(r.run.named[0]);
                      CHECK(user < 8);  // cluster 0
                      // a peer's barrier: the CTA barrier orders a CTA's own uses; made by its INIT but unordered,
                      // or (the owner CTA not yet started) not made at all
                      // (a receive or free slot's, or the seam's part barrier, which its PART reaches first)
                      CHECK(((contains(r.run.detail, "[slot 0] of CTA ") || contains(r.run.detail, "the seam's part barrier of CTA ")) &&
                             !contains(r.run.detail, "of CTA " + std::to_string(user) + ",")));
                      if (r.run.named.size() == 2) {
                          CHECK(PlanV2::proc_role(r.run.named[1]) == V2Role::producer);
                          CHECK(PlanV2::proc_cta(r.run.named[1]) < 8);
                          CHECK(PlanV2::proc_cta(r.run.named[1]) != user);
                          CHECK(contains(r.run.detail, "(INIT), but nothing orders that before this use"));
                      } else {
                          CHECK(contains(r.run.detail, "which no INIT has made yet"));
                      }
                      CHECK(contains(r.run.detail, "a cluster barrier between a barrier's initialisation and its first use by a peer is missing"));
                      CHECK(contains(r.report, "first: cluster_barriers:"));
                  });
}

// The seam's faults (x computed in each cluster: docs/emulator.md "The seam").

TEST_CASE("an owner's part barrier armed short: VISIBILITY_FAULT by seam_landed at its GATE, naming the missing sender") {
    each_schedule(Fault::seam_part_short, Detector::seam_landed, {Detector::none, Detector::deadlock, Detector::result},
                  [&](const V2EmulateResult& r) {
                      REQUIRE(r.run.named.size() == 2);
                      CHECK(r.run.named[0] == PlanV2::proc(0, V2Role::seam));
                      CHECK(PlanV2::proc_role(r.run.named[1]) == V2Role::seam);
                      CHECK(PlanV2::proc_cta(r.run.named[1]) < 8);  // a sender of cluster 0
                      CHECK(contains(r.run.detail, "CTA 0 (cluster 0 rank 0) seam GATE(CTA 0: rows 0) reads the part hand-off from CTA " +
                                                       std::to_string(PlanV2::proc_cta(r.run.named[1])) + " "));
                      CHECK(contains(r.run.detail, "(the seam's part barrier of CTA 0 was armed for 280 bytes; its senders send 320)"));
                      CHECK(contains(r.report, "plan checks: 1 problem(s); first: seam_armed:"));  // the static check sees it too
                  });
}

TEST_CASE("a consumer that starts in_proj before its CTA's x: VISIBILITY_FAULT by x_ready at its first take") {
    each_schedule(Fault::x_before_seam, Detector::x_ready, {Detector::none, Detector::result}, [&](const V2EmulateResult& r) {
        REQUIRE(r.run.named.size() == 2);
        CHECK(r.run.named[0] == PlanV2::proc(0, V2Role::consumer, 0));
        CHECK(r.run.named[1] == PlanV2::proc(0, V2Role::seam));
        CHECK(contains(r.run.detail, "consumer 0 (tile 0, even k-steps) TAKE(chunk 0) multiplies the CTA's x, which CTA 0 (cluster 0 rank 0) seam "));
        CHECK(r.problems.empty());  // the plan is sound: the kernel's body skips the wait
    });
}

TEST_CASE("a weight send dropped: DEADLOCK, the blocked seam processes named first with the barrier each waits on") {
    each_schedule(Fault::seam_wgt_dropped, Detector::deadlock, {Detector::watchdog}, [&](const V2EmulateResult& r) {
        CHECK(named(r, PlanV2::proc(1, V2Role::seam)));
        REQUIRE(r.run.named.size() == 8);
        for (int q : r.run.named) CHECK(PlanV2::proc_role(q) == V2Role::seam);  // the hang's cause before its consequences
        CHECK(contains(r.run.detail, "CTA 1 (cluster 0 rank 1) seam MIX(CTA 1) waits for the seam's wgt barrier of CTA 1 round 0 "
                                     "(0 phases completed, 0 arrivals and 24 bytes pending)"));
        CHECK(r.problems.empty());
    });
}

// The tail's faults (the owners' words and the tasks' hand-offs: docs/emulator.md "The tail").

TEST_CASE("words read without polling them: STALE_READ by words_fresh at task 0's POLL, naming the publishing owner") {
    each_schedule(Fault::tail_word_unwaited, Detector::words_fresh, {Detector::none, Detector::result}, [&](const V2EmulateResult& r) {
        REQUIRE(r.run.named.size() == 2);
        CHECK(r.run.named[0] == PlanV2::proc(0, V2Role::seam));
        CHECK(PlanV2::proc_role(r.run.named[1]) == V2Role::reducer);
        CHECK(contains(r.run.detail, "CTA 0 (cluster 0 rank 0) seam POLL(task 0: request 0, head 0, rows 0..15) reads the words of rows "));
        CHECK(contains(r.run.detail, "without polling them until they carry this step's tag"));
        CHECK(r.problems.empty());  // the plan is sound: the task's body skips the wait
    });
}

TEST_CASE("words published with the step before's tag: DEADLOCK, the polling tasks named with the words each waits for") {
    each_schedule(Fault::tail_stale_tag, Detector::deadlock, {Detector::watchdog}, [&](const V2EmulateResult& r) {
        REQUIRE(!r.run.named.empty());
        CHECK(PlanV2::proc_role(r.run.named[0]) == V2Role::seam);  // the tail's blocked tasks first, then the roles at the exit
        // receive entry 0 holds f_a's rows 0..7, which every pair's tile 0 polls
        CHECK(contains(r.run.detail, "seam POLL(task 0: request 0, head 0, rows 0..15) waits for the words of rows 256..263 (receive "
                                     "entry 0) of request 0"));
        CHECK(r.problems.empty());
    });
}

TEST_CASE("a pair's hand-off used without waiting: VISIBILITY_FAULT by tail_landed at CTA 0's step, naming the sender") {
    // the Σō²: CTA 0's last NORM, task 4's (an earlier NORM is ordered after its peers' RECs by the later pairs' waits)
    struct Case {
        Fault fault;
        const char* reads;  // what the step reads, as the detail names it
    };
    for (const Case& x : {Case{Fault::tail_onrm_unwaited, "NORM(task 4: request 1, head 0, rows 0..15) reads the partial Σō² of tile "},
                          Case{Fault::tail_decay_unwaited, "REC(task 0: request 0, head 0, rows 0..15) reads the decays of tile "}}) {
        each_schedule(x.fault, Detector::tail_landed, {Detector::none, Detector::result}, [&](const V2EmulateResult& r) {
            REQUIRE(r.run.named.size() == 2);
            CHECK(r.run.named[0] == PlanV2::proc(0, V2Role::seam));
            CHECK(PlanV2::proc_role(r.run.named[1]) == V2Role::seam);
            CHECK(contains(r.run.detail, std::string("CTA 0 (cluster 0 rank 0) seam ") + x.reads));
            CHECK(r.problems.empty());
        });
    }
}

TEST_CASE("the tail's faults are refused where the plan leaves the tail out") {
    V2EmulateOptions o;
    o.fixture.preset = "small";
    for (Fault f : {Fault::tail_word_unwaited, Fault::tail_stale_tag, Fault::tail_onrm_unwaited, Fault::tail_decay_unwaited}) {
        o.fault = f;
        CHECK_THROWS_WITH_AS(emulate_v2(small_v2(), o), doctest::Contains("is planted in the tail, which this plan leaves out"), BadInput);
    }
}

TEST_CASE("the seam's faults are refused where the plan leaves the seam out") {
    V2EmulateOptions o;
    o.fixture.preset = "k3";
    o.fixture.R = 2, o.fixture.L = 8;  // S = 16: x an input
    const V2Prepared p = prepare_v2(o);
    REQUIRE(!p.plan.has_seam());
    for (Fault f : {Fault::seam_part_short, Fault::x_before_seam, Fault::seam_wgt_dropped}) {
        o.fault = f;
        CHECK_THROWS_WITH_AS(emulate_v2(p, o), doctest::Contains("which this plan leaves out"), BadInput);
    }
}
