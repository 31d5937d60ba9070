// Each of the emulator's detectors catches a planted fault that no other detector catches
// (emulator/detectors.hpp lists which): with every detector on, the run ends with that detector's
// verdict and names it; with that one detector off, the same runs pass, or end as another
// detector's verdict. So breaking any detector fails a test here, even where another would have
// caught its fault a step later.
#include <doctest/doctest.h>

#include <set>

#include "emu_util.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

namespace {

std::vector<Schedule> schedules(int randoms, int pcts) {
    std::vector<Schedule> s;
    for (int k = 1; k <= randoms; ++k) {
        Schedule r = Schedule::parse("random");
        r.seed = uint64_t(k);
        s.push_back(r);
    }
    for (int k = 1; k <= pcts; ++k) {
        Schedule p = Schedule::parse("pct");
        p.seed = uint64_t(k);
        s.push_back(p);
    }
    for (const char* d : {"rr", "delay:attn", "delay:gemv", "delay:kda"}) s.push_back(Schedule::parse(d));
    return s;
}

// The small preset for two steps, with its measured envelope (so that a fault the envelope would
// see is seen); prepared once.
Prepared& enveloped() {
    static Prepared p = [] {
        EmulateOptions o = small_options();
        o.envelope_orders = 0;
        return prepare(o, 2);
    }();
    return p;
}

// The small preset's options for a run of fault f under schedule s (no envelope).
EmulateOptions planted(Fault f, const Schedule& s) {
    EmulateOptions o = small_options();
    o.fault = f;
    o.schedule = s;
    return o;
}

// The same on the enveloped preset, with detectors d.
EmulateResult run(Fault f, const Schedule& s, DetectorSet d) {
    EmulateOptions o = planted(f, s);
    o.envelope_orders = 0;
    o.detectors = d;
    return emulate(enveloped(), o);
}

bool named(const EmulateResult& r, int cta) {
    return std::find(r.run.named.begin(), r.run.named.end(), cta) != r.run.named.end();
}

// The run of o with detector d off: it passes, bit for bit (nothing but d could tell the fault).
void passes_without(Prepared& p, EmulateOptions o, Detector d) {
    o.detectors = DetectorSet{}.without(d);
    const EmulateResult off = emulate(p, o);
    INFO(std::string(to_string(d)), " off:\n", off.report);
    REQUIRE(off.verdict == Verdict::PASS);
    CHECK(first_different(off.run.outputs[0], p.refs[0]) == "");
}

}  // namespace

TEST_CASE("the detector list: a detector for every verdict, names that parse back, each planted fault one detector's") {
    std::set<std::string> names;
    std::set<Fault> sole;
    for (const DetectorInfo& d : detector_list()) {
        INFO(std::string(d.name));
        CHECK(names.insert(d.name).second);
        CHECK(std::string(d.what).size() > 20);
        CHECK(to_string(d.detector) == std::string(d.name));
        const DetectorSet off = DetectorSet::parse_off(d.name);
        for (const DetectorInfo& e : detector_list()) CHECK(off.has(e.detector) == (e.detector != d.detector));
        CHECK(off.off_str() == d.name);
        if (d.sole == Fault::none) {
            CHECK(std::string(d.planted).size() > 20);  // planted in a test below, not as a fault
        } else {
            CHECK(sole.insert(d.sole).second);
            CHECK(parse_fault(to_string(d.sole)) == d.sole);
        }
    }
    for (Verdict v : {Verdict::DEADLOCK, Verdict::LIVELOCK, Verdict::STALE_READ, Verdict::VISIBILITY_FAULT,
                      Verdict::WRITE_CONFLICT, Verdict::WRONG_SPLIT, Verdict::POLL_BEHIND_LOADS, Verdict::WRONG_RESULT,
                      Verdict::OUT_OF_ENVELOPE, Verdict::REUSE_BEFORE_FREE}) {
        bool some = false;
        for (const DetectorInfo& d : detector_list()) some |= d.verdict == v;
        CHECK_MESSAGE(some, std::string(to_string(v)));
    }
    // the one fault that is a race (some schedules rightly pass it) is delayed visibility's
    for (const FaultInfo& f : fault_list()) CHECK(f.race == (f.fault == info(Detector::delayed_visibility).sole));
    CHECK(DetectorSet::parse_off("none").all());
    const DetectorSet two = DetectorSet::parse_off("result+write_conflict");
    CHECK(two.off_str() == "write_conflict+result");
    CHECK(DetectorSet::parse_off(two.off_str()) == two);
    CHECK_THROWS_AS(DetectorSet::parse_off("sanity"), BadInput);
    CHECK_THROWS_AS(DetectorSet::parse_off("result+result"), BadInput);
    CHECK_THROWS_AS(DetectorSet::parse_off(""), BadInput);
}

TEST_CASE("each detector's own fault: caught by it under every schedule, and not by it when it is off") {
    // what a run of the fault ends as with its detector off: a pass, or another detector's verdict
    const std::vector<std::pair<Detector, std::set<Detector>>> cases = {
        {Detector::happens_before, {Detector::none, Detector::result}},  // x read as it happened to land
        {Detector::stale_epoch, {Detector::happens_before, Detector::result}},
        {Detector::write_conflict, {Detector::none}},
        {Detector::split_order, {Detector::result}},
        {Detector::poll_behind_loads, {Detector::none}},
        {Detector::deadlock, {Detector::watchdog}},
        {Detector::lost_handoff, {Detector::watchdog}},
        {Detector::result, {Detector::none}},  // inside the envelope
    };
    for (const auto& [d, when_off] : cases) {
        const DetectorInfo& i = info(d);
        for (const Schedule& s : schedules(3, 2)) {
            const EmulateResult on = run(i.sole, s, DetectorSet{});
            INFO(std::string(i.name), " / ", std::string(to_string(i.sole)), " under ", s.str(), " seed ", s.seed, "\n", on.report);
            CHECK(on.verdict == i.verdict);
            CHECK(on.run.detector == d);
            CHECK(contains(on.report, std::string("caught by: ") + i.name));
            const EmulateResult off = run(i.sole, s, DetectorSet{}.without(d));
            INFO("with ", std::string(i.name), " off:\n", off.report);
            CHECK(off.run.detector != d);
            CHECK(when_off.count(off.run.detector) == 1);
            CHECK((off.run.detector == Detector::none) == (off.verdict == Verdict::PASS));
            CHECK(contains(off.report, std::string("detectors off: ") + i.name));
        }
    }
}

TEST_CASE("delayed visibility alone shows a gate that polls only the last partial of each slice") {
    // a slice's partials are stored in one instruction, the last source last; polling only that one
    // is safe only if stores land in the order they were made
    Prepared& p = small_prepared();
    const Plan& plan = p.plan;
    const int nb = plan.config().nb;
    int caught = 0;
    const std::vector<Schedule> all = schedules(12, 6);
    for (const Schedule& s : all) {
        const EmulateOptions o = planted(Fault::gate_polls_last_partial, s);
        const EmulateResult on = emulate(p, o);
        INFO(s.str(), " seed ", s.seed, "\n", on.report);
        if (on.verdict != Verdict::PASS) {
            ++caught;
            CHECK(on.verdict == Verdict::STALE_READ);
            CHECK(on.run.detector == Detector::delayed_visibility);
            REQUIRE(on.run.entry.box == Mailbox::PART);
            const int src = on.run.entry.entry / plan.n_attn() % (nb + 1), slice = on.run.entry.entry % plan.n_attn();
            CHECK(on.run.entry.entry / plan.n_attn() / (nb + 1) == 0);  // row 0
            CHECK(src < nb);                                             // a source it did not poll
            CHECK(named(on, 0));                                         // the gate
            CHECK(named(on, plan.producer(on.run.entry).cta));           // the slice's CTA
            CHECK(plan.producer(on.run.entry).cta == plan.attn_cta(slice, 0));
            CHECK(contains(on.run.detail, "CTA 0 (attn) ATTN_GATE(row 0) used PART[row 0][src "));
            CHECK(contains(on.run.detail, "before its store had landed"));
            CHECK(contains(on.run.detail, "the reader never polled the entry"));
        }
        passes_without(p, o, Detector::delayed_visibility);  // every store lands as it is made
    }
    MESSAGE(caught, " of ", all.size(), " schedules caught it");
    CHECK(caught * 3 >= int(all.size()));  // a delay model that lands stores in order would catch none
}

TEST_CASE("two instructions storing one g1 column, no flag touched: the write-conflict check alone names them") {
    Prepared& p = small_prepared();
    const Plan& plan = p.plan;
    REQUIRE(plan.n_chunks() > 1);
    const int first = plan.kda_cta(0, 0, 0), second = plan.kda_cta(0, 0, 1);
    REQUIRE(first != second);
    for (const Schedule& s : schedules(3, 3)) {
        const EmulateOptions o = planted(Fault::g1_share_long, s);
        const EmulateResult on = emulate(p, o);
        INFO(s.str(), " seed ", s.seed, "\n", on.report);
        CHECK(on.verdict == Verdict::WRITE_CONFLICT);
        CHECK(on.run.detector == Detector::write_conflict);
        CHECK(named(on, first));
        CHECK(named(on, second));
        CHECK(on.run.entry == plan.qk(0, 0, 1));  // the guard of the column: chunk 1's share
        CHECK(contains(on.run.detail, "g1[row 0][col " + std::to_string(plan.qk_share()) + "] is stored twice"));
        CHECK(contains(on.run.detail, "(the plan's producer: CTA " + std::to_string(second) +
                                          " (kda) KDA_CONV(r 0, h 0, chunk 1) via QK[r 0][h 0][chunk 1])"));
        passes_without(p, o, Detector::write_conflict);  // the same value, stored before each writer's release
    }
}

TEST_CASE("a poll behind weight loads that have already landed: caught all the same, by that detector alone") {
    // a load is outstanding until its task uses it: whether it landed before the poll in this run is
    // luck a device under load does not repeat
    Prepared& p = small_prepared();
    const Plan& plan = p.plan;
    const int cta = plan.kda_cta(0, 0, 0);
    int landed = 0;
    std::vector<Schedule> all = schedules(16, 8);
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        Schedule s = Schedule::parse("pct:6");
        s.seed = seed;
        all.push_back(s);
    }
    for (const Schedule& s : all) {
        const EmulateOptions o = planted(Fault::kda_loads_at_start, s);
        const EmulateResult on = emulate(p, o);
        INFO(s.str(), " seed ", s.seed, "\n", on.report);
        CHECK(on.verdict == Verdict::POLL_BEHIND_LOADS);
        CHECK(on.run.detector == Detector::poll_behind_loads);
        CHECK(on.run.named == std::vector<int>{cta});
        CHECK(contains(on.run.detail, "while the weight loads issued by KDA_LOAD(r 0, h 0, chunk 0)"));
        landed += contains(on.run.detail, "landed at t=");
        passes_without(p, o, Detector::poll_behind_loads);
    }
    MESSAGE(landed, " of ", all.size(), " schedules had the loads landed before the poll");
    CHECK(landed >= 2);  // a check of loads in flight only would have passed those
}

TEST_CASE("a fast exp in one task's decay: inside the envelope, caught by the bit comparison alone") {
    const Plan& plan = enveloped().plan;
    for (const Schedule& s : schedules(2, 2)) {
        const EmulateResult on = run(Fault::decay_fast_exp, s, DetectorSet{});
        INFO(s.str(), " seed ", s.seed, "\n", on.report);
        CHECK(on.verdict == Verdict::WRONG_RESULT);
        CHECK(on.run.detector == Detector::result);
        CHECK(on.run.named == std::vector<int>{plan.kda_cta(0, 0, 0)});
        CHECK(contains(on.run.detail, "step 0: ssm_state["));
        CHECK(contains(on.run.detail, "KDA_REC(r 0, h 0, chunk 0)"));
        CHECK(contains(on.report, "every output inside"));  // the envelope does not see it
        const EmulateResult off = run(Fault::decay_fast_exp, s, DetectorSet{}.without(Detector::result));
        INFO("result off:\n", off.report);
        CHECK(off.verdict == Verdict::PASS);
        CHECK(contains(off.report, "not compared with the reference (detector result off)"));
    }
}

TEST_CASE("the watchdog alone stops a run that makes no progress within its budget") {
    Prepared& p = small_prepared();
    MachineOptions mo;
    mo.watchdog_steps = 5;  // far below what one wait of the clean plan takes under PCT
    mo.schedule = Schedule::parse("pct");
    const MachineResult on = run_machine(p.plan, p.input, mo);
    CHECK(on.verdict == Verdict::LIVELOCK);
    CHECK(on.detector == Detector::watchdog);
    mo.detectors = DetectorSet{}.without(Detector::watchdog);
    const MachineResult off = run_machine(p.plan, p.input, mo);
    INFO(off.detail);
    REQUIRE(off.verdict == Verdict::PASS);
    CHECK(first_different(off.outputs[0], p.refs[0]) == "");
}

// The envelope's own plant, an envelope narrower than the plan's order, is in test_envelope.cpp.
