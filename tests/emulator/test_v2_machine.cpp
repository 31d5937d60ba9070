// Kernel v2's in_proj in the emulator (emulator/v2/): the clean plan passes under every schedule kind,
// its proj equal bit for bit to the reference in the plan's order (in_proj=cluster:8, computed by
// reference/ on its own) and to itself across schedules, and not to the other orders; the production
// shape at S = 1, 8 and 64; x computed by the plan's seam from the step's inputs (one input bit
// changes proj; a GATE that sums early, unseen by its detector, does too); and the machine's own
// stops, each on a planted defect: a hang (a copy dropped), the step budget, a wrong weight byte.
#include <doctest/doctest.h>

#include <cstring>

#include "core/fixture_gen.hpp"
#include "emu_util.hpp"
#include "emulator/v2/emulate_v2.hpp"
#include "reference/reference.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

namespace {

V2EmulateOptions v2_options(const char* preset, int R = 2, int L = 4) {
    V2EmulateOptions o;
    o.fixture.preset = preset;
    o.fixture.R = R;
    o.fixture.L = L;
    return o;
}

const V2Prepared& small_v2() {
    static const V2Prepared p = prepare_v2(v2_options("small"));
    return p;
}

std::vector<Schedule> v2_schedules() {
    std::vector<Schedule> s;
    for (const char* k : {"random", "pct", "pct:6"})
        for (uint64_t seed = 1; seed <= 4; ++seed) {
            Schedule x = Schedule::parse(k);
            x.seed = seed;
            s.push_back(x);
        }
    for (const char* k : {"rr", "delay:cta:0", "delay:cta:9", "delay:cta:15"}) s.push_back(Schedule::parse(k));
    return s;
}

// o under every schedule of v2_schedules: each run passes, runs to its end with no plan problem, then `check`
template <class F>
void each_clean_run(const V2Prepared& p, V2EmulateOptions o, F&& check) {
    for (const Schedule& s : v2_schedules()) {
        o.schedule = s;
        const V2EmulateResult r = emulate_v2(p, o);
        INFO(s.str(), " seed ", s.seed, "\n", r.report);
        CHECK(r.verdict == Verdict::PASS);
        CHECK(r.run.finished);
        CHECK(r.problems.empty());
        check(r);
    }
}

V2EmulateOptions tail_options(const char* preset, int R = 2, int L = 4) {
    V2EmulateOptions o = v2_options(preset, R, L);
    o.tail = true;
    return o;
}

const V2Prepared& small_tail() {
    static const V2Prepared p = prepare_v2(tail_options("small"));
    return p;
}

// the tail's outputs of a run against another set, bit for bit, each named where it differs
void check_tail(const StepOutputs<float>& got, const StepOutputs<float>& want) {
    for (auto m : {&StepOutputs<float>::g1, &StepOutputs<float>::qkv, &StepOutputs<float>::conv_state, &StepOutputs<float>::o,
                   &StepOutputs<float>::core_out})
        CHECK(same_bits(got.*m, want.*m));
    REQUIRE(got.ssm_state.size() == want.ssm_state.size());
    CHECK(std::memcmp(got.ssm_state.data(), want.ssm_state.data(), got.ssm_state.size() * sizeof(float)) == 0);
}

// the reference's tail (C-F) from proj, in `ord`
StepOutputs<float> reference_tail(const StepInputs& in, const ReductionOrder& ord, const std::vector<bf16>& proj) {
    StepOutputs<float> t;
    t.g1 = ref::f_b<float>(in, ord, proj);
    ref::short_conv<float>(in, proj, t.qkv, t.conv_state);
    ref::recurrence<float>(in, ord, t.qkv, proj, t.g1, t.o, t.ssm_state);
    t.core_out = ref::out_norm<float>(in, ord, t.o, proj);
    return t;
}

}  // namespace

TEST_CASE("the tail on the small plan passes under every schedule, qkv, g1, o, core_out and the states bit-identical to the reference") {
    const V2Prepared& p = small_tail();
    REQUIRE(p.plan.has_tail());
    REQUIRE(static_cast<bool>(p.step));
    // the reference computed here, on its own, in the plan's order
    const StepOutputs<float> want = reference_tail(*p.step, p.plan.reduction_order(), p.ref_proj);
    size_t nonzero = 0;
    for (bf16 v : want.core_out) nonzero += (v.bits & 0x7fff) != 0;
    CHECK(nonzero > want.core_out.size() / 2);  // the outputs are not trivially zero
    CHECK(std::memcmp(want.ssm_state.data(), p.step->ssm_state.data(), want.ssm_state.size() * sizeof(float)) != 0);  // states written
    each_clean_run(p, tail_options("small"), [&](const V2EmulateResult& r) {
        check_tail(r.run.tail, want);
        CHECK(contains(r.report, "the tail: g1, qkv, conv_state, o, ssm_state and core_out bit-identical to the reference"));
    });
}

TEST_CASE("the emulated tail is the plan's order: the reference in the sequential order gives other state bits") {
    const V2Prepared& p = small_tail();
    const StepOutputs<float> seq = reference_tail(*p.step, ReductionOrder{}, p.ref_proj);
    const V2EmulateResult r = emulate_v2(p, tail_options("small"));
    REQUIRE(r.verdict == Verdict::PASS);
    // the f32 states carry the recurrence's sums unrounded (o, rounded to bf16, may hide them at this shape)
    CHECK(std::memcmp(r.run.tail.ssm_state.data(), seq.ssm_state.data(), seq.ssm_state.size() * sizeof(float)) != 0);
    CHECK(same_bits(r.run.tail.qkv, seq.qkv));  // the conv has no sum to reorder
}

TEST_CASE("the tail with a request without states: its o is +0, no state of it is written, its conv window zeros") {
    V2Prepared p = small_tail();
    StepInputs in = *p.step;
    for (int t = 0; t < in.cfg.L; ++t) in.state_indices[size_t(t)] = 0;  // request 0: no slot at all
    p.step = std::make_shared<const StepInputs>(in);
    p.ref_tail = reference_tail(in, p.plan.reduction_order(), p.ref_proj);
    const V2EmulateResult r = emulate_v2(p, tail_options("small"));
    INFO(r.report);
    CHECK(r.verdict == Verdict::PASS);
    check_tail(r.run.tail, p.ref_tail);
    for (int s = 0; s < in.cfg.L; ++s)
        for (int e = 0; e < in.cfg.E(); ++e) CHECK(r.run.tail.o[size_t(s) * size_t(in.cfg.E()) + size_t(e)].bits == 0);
}

TEST_CASE("the tail on the production plan at S = 1 and 8 passes, every output bit-identical") {
    for (const auto& rl : std::vector<std::pair<int, int>>{{1, 1}, {2, 4}}) {
        const int R = rl.first, L = rl.second;
        CAPTURE(R);
        CAPTURE(L);
        const V2Prepared p = prepare_v2(tail_options("k3", R, L));
        REQUIRE(p.plan.tasks.size() == size_t(R) * 12 * 8);
        const V2EmulateResult r = emulate_v2(p, tail_options("k3", R, L));
        INFO(r.report);
        CHECK(r.verdict == Verdict::PASS);
        CHECK(r.run.finished);
        check_tail(r.run.tail, reference_tail(*p.step, p.plan.reduction_order(), p.ref_proj));
    }
}

TEST_CASE("the tail across shapes and step metadata: R 1-5, L 1-8, the ds layout, block-write, null requests and partial nulls") {
    struct Case { int R, L, nb; bool bw; ConvLayout lay; int nulls, partial; uint64_t seed; };
    const Case cases[] = {{1, 1, 1, false, ConvLayout::sd, 0, 0, 2}, {1, 8, 4, false, ConvLayout::sd, 0, 0, 3},
                          {3, 3, 2, false, ConvLayout::ds, 1, 0, 4}, {4, 2, 7, true, ConvLayout::sd, 0, 2, 5},
                          {5, 1, 8, false, ConvLayout::ds, 2, 0, 6}, {2, 5, 3, true, ConvLayout::ds, 1, 1, 7}};
    for (const Case& k : cases) {
        Config c = Config::preset("small");
        c.R = k.R, c.L = k.L, c.nb = k.nb, c.block_write = k.bw, c.conv_layout = k.lay, c.seed = k.seed;
        FixtureOptions fo;
        fo.null_requests = k.nulls, fo.partial_nulls = k.partial;
        const StepInputs in = make_fixture(c, fo);
        CAPTURE(k.R);
        CAPTURE(k.L);
        CAPTURE(k.seed);
        const V2Prepared p = prepare_v2(tail_options("small", k.R, k.L), in);
        for (const char* sched : {"random", "pct"}) {
            V2EmulateOptions o = tail_options("small", k.R, k.L);
            o.schedule = Schedule::parse(sched);
            o.schedule.seed = k.seed;
            const V2EmulateResult r = emulate_v2(p, o);
            INFO(r.report);
            CHECK(r.verdict == Verdict::PASS);
            check_tail(r.run.tail, reference_tail(in, p.plan.reduction_order(), p.ref_proj));
        }
    }
}

TEST_CASE("one wrong f_b weight: WRONG_RESULT in g1, the first tail output it reaches") {
    V2Prepared p = small_tail();
    StepInputs in = *p.step;
    in.f_b_w[0].bits ^= 0x0100;  // g1 column 0 of every row; the reference keeps the fixture's
    p.step = std::make_shared<const StepInputs>(in);
    const V2EmulateResult r = emulate_v2(p, tail_options("small"));
    CHECK(r.verdict == Verdict::WRONG_RESULT);
    CHECK(contains(r.run.detail, "g1[0] = "));
}

TEST_CASE("kernel v2's clean small plan passes under every schedule, proj bit-identical to the reference in its order") {
    const V2Prepared& p = small_v2();
    std::vector<bf16> first;
    each_clean_run(p, v2_options("small"), [&](const V2EmulateResult& r) {
        CHECK(same_bits(r.run.proj, p.ref_proj));
        if (first.empty()) first = r.run.proj;
        CHECK(same_bits(r.run.proj, first));
        CHECK(contains(r.report, "proj: bit-identical to the reference in in_proj=cluster:8"));
    });
}

TEST_CASE("the seam computes x from the step's inputs: the x input is not read, one input bit changes proj") {
    const V2Prepared& base = small_v2();
    REQUIRE(base.plan.has_seam());
    V2Prepared p = base;
    for (bf16& v : p.x) v = bf16::round(7.f);  // the machine's x input: a plan with the seam leaves it alone
    V2EmulateResult r = emulate_v2(p, v2_options("small"));
    INFO(r.report);
    CHECK(r.verdict == Verdict::PASS);
    CHECK(same_bits(r.run.proj, base.ref_proj));
    p = base;
    p.seam.blocks[0].bits ^= 0x0040;  // row 0's bank row 0, column 0 (CTA 0's slice): its softmax, so its whole x row
    r = emulate_v2(p, v2_options("small"));
    CHECK(r.verdict == Verdict::WRONG_RESULT);
    CHECK(r.run.detector == Detector::result);
    CHECK(contains(r.run.detail, "proj[row 0]"));
}

TEST_CASE("a GATE that sums before its last partials landed, with seam_landed off: the values it took change proj") {
    // seam_part_short arms rank 0's part barrier one sender short; where the short phase completes
    // before that sender's partials land, the GATE sums zeros in their place
    int wrong = 0, runs = 0;
    for (const Schedule& s : v2_schedules()) {
        V2EmulateOptions o = v2_options("small");
        o.schedule = s;
        o.fault = Fault::seam_part_short;
        o.detectors = DetectorSet{}.without(Detector::seam_landed);
        const V2EmulateResult r = emulate_v2(small_v2(), o);
        INFO(s.str(), " seed ", s.seed, "\n", r.report);
        ++runs;
        CHECK((r.verdict == Verdict::PASS || r.run.detector == Detector::result));
        wrong += r.run.detector == Detector::result;
    }
    CHECK(wrong > 0);
    MESSAGE(wrong, " of ", runs, " schedules summed early");
}

TEST_CASE("the emulated proj is the cluster order's: other orders of the same sums give other bits") {
    // the reference in sequential and split:8 orders differs from the cluster order somewhere at the
    // production shape; the emulated proj follows the cluster order there
    const V2Prepared p = prepare_v2(v2_options("k3"));
    Config c = Config::preset("k3");
    c.R = 2, c.L = 4, c.seed = 1;
    const StepInputs in = make_fixture(c);
    for (const char* other : {"sequential", "split:8"}) {
        CAPTURE(other);
        const std::vector<bf16> ref = ref::in_proj<float>(in, ReductionOrder::parse(other), p.x);
        CHECK(!same_bits(ref, p.ref_proj));
    }
    const V2EmulateResult r = emulate_v2(p, v2_options("k3"));
    INFO(r.report);
    CHECK(r.verdict == Verdict::PASS);
    CHECK(same_bits(r.run.proj, p.ref_proj));
}

TEST_CASE("the production plan at S = 1 and 64 passes, with every role run to its end") {
    for (const auto& shape : std::vector<std::pair<int, int>>{{1, 1}, {8, 8}}) {
        const int R = shape.first, L = shape.second;
        CAPTURE(R);
        CAPTURE(L);
        V2EmulateOptions o = v2_options("k3", R, L);
        o.schedule = Schedule::parse("pct");
        const V2Prepared p = prepare_v2(o);
        const V2EmulateResult r = emulate_v2(p, o);
        INFO(r.report);
        CHECK(r.verdict == Verdict::PASS);
        CHECK(contains(r.report, "in_proj on 15 clusters of 8 (120 CTAs), 105 units"));
        CHECK(r.run.proj.size() == size_t(R * L) * 6288);
    }
}

TEST_CASE("a copy dropped from a producer's program: a hang, its blocked consumers named with the barrier they wait on") {
    const V2Prepared& base = small_v2();
    V2Prepared p = base;
    auto& prog = p.plan.programs[size_t(PlanV2::proc(3, V2Role::producer))];
    prog.erase(prog.begin() + 4);  // COPY(chunk 1) of CTA 3 (after INIT, SYNC, INPUT, COPY 0)
    for (const char* s : {"random", "pct", "rr"}) {
        V2EmulateOptions o = v2_options("small");
        o.schedule = Schedule::parse(s);
        const V2EmulateResult r = emulate_v2(p, o);
        INFO(r.report);
        CHECK(r.verdict == Verdict::DEADLOCK);
        CHECK(r.run.detector == Detector::deadlock);
        CHECK(contains(r.run.detail, "CTA 3 (cluster 0 rank 3) consumer 0 (tile 0, even k-steps) TAKE(chunk 1) waits for full[slot 1] of CTA 3 round 0"));
        CHECK(contains(r.run.detail, "0 phases completed, 1 arrivals and 0 bytes pending"));
        CHECK(std::find(r.run.named.begin(), r.run.named.end(), PlanV2::proc(3, V2Role::consumer, 0)) != r.run.named.end());
        // with the deadlock detector off the run still ends: the watchdog names it
        o.detectors = DetectorSet{}.without(Detector::deadlock);
        const V2EmulateResult off = emulate_v2(p, o);
        CHECK(off.run.detector == Detector::watchdog);
        CHECK(off.verdict == Verdict::LIVELOCK);
    }
}

TEST_CASE("the step budget: a watchdog below what the clean plan needs stops it") {
    V2EmulateOptions o = v2_options("small");
    o.watchdog_steps = 3;
    o.schedule = Schedule::parse("pct");
    const V2EmulateResult r = emulate_v2(small_v2(), o);
    CHECK(r.verdict == Verdict::LIVELOCK);
    CHECK(r.run.detector == Detector::watchdog);
}

TEST_CASE("one wrong weight element: WRONG_RESULT at the rows it feeds, naming their owner's REDUCE") {
    V2Prepared p = small_v2();
    // the run's first element: CTA 0's first chunk, unit 0's tile 0, k-step 0, lane 0's first element:
    // in_proj row 256 (f_a's first, the first in head order), column 0
    p.packed[0] ^= 0x0100;
    const V2EmulateResult r = emulate_v2(p, v2_options("small"));
    INFO(r.report);
    CHECK(r.verdict == Verdict::WRONG_RESULT);
    CHECK(r.run.detector == Detector::result);
    CHECK(contains(r.run.detail, "[col 256] = "));
    CHECK(contains(r.run.detail, "stored by CTA 0 (cluster 0 rank 0) reducer REDUCE(unit 0)"));
    CHECK(r.run.named == std::vector<int>{PlanV2::proc(0, V2Role::reducer)});
    V2EmulateOptions off = v2_options("small");
    off.detectors = DetectorSet{}.without(Detector::result);
    CHECK(emulate_v2(p, off).verdict == Verdict::PASS);
}

TEST_CASE("kernel v2 refuses what it does not model: kernel v1's faults and role delays") {
    V2EmulateOptions o = v2_options("small");
    o.fault = Fault::missing_xrdy;
    CHECK_THROWS_AS(emulate_v2(small_v2(), o), BadInput);
    o.fault = Fault::none;
    o.schedule = Schedule::parse("delay:gemv");
    CHECK_THROWS_AS(emulate_v2(small_v2(), o), BadInput);
    o.schedule = Schedule::parse("delay:cta:16");
    CHECK_THROWS_AS(emulate_v2(small_v2(), o), BadInput);
}
