// The production shape: the default run (k3, R 2, L 4, nb 4, 132 CTAs) passes, its outputs are the
// reference in the plan's order bit for bit and lie inside the envelope; the built-in envelope is
// what a fresh measurement gives; and one fault at scale.
#include <doctest/doctest.h>

#include "emu_util.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

namespace {

void same_diff(const TensorDiff& a, const TensorDiff& b) {
    CHECK(a.frac_identical == b.frac_identical);
    CHECK(a.max_row_ulp == b.max_row_ulp);
    CHECK(a.rel_l2 == b.rel_l2);
    CHECK(a.max_abs == b.max_abs);
    CHECK(a.max_ulp == b.max_ulp);
}

// The step emulated under each schedule: PASS, and the reference in the plan's order bit for bit.
void bit_for_bit(Prepared& p, EmulateOptions o, std::initializer_list<const char*> schedules) {
    const StepOutputs<float> expect = ref::run<float>(p.input, p.plan.reduction_order());
    for (const char* s : schedules) {
        o.schedule = Schedule::parse(s);
        EmulateResult r = emulate(p, o);
        INFO(s, ": ", r.report);
        REQUIRE(r.verdict == Verdict::PASS);
        CHECK(first_different(r.run.outputs[0], expect) == "");
    }
}

}  // namespace

TEST_CASE("k3 default run") {
    EmulateOptions o;  // the defaults of `monokda emulate`
    Prepared p = prepare(o, 1);
    REQUIRE(p.plan.blocks() == 132);
    // the parallel fixture generator gives the sequential generator's values (digest recorded from it)
    CHECK(inputs_digest(p.input) == "1afb6e48ccfe0b5b");
    CHECK(p.envelope_source == "built in");
    EmulateResult r = emulate(p, o);
    INFO(r.report);
    REQUIRE(r.verdict == Verdict::PASS);
    const StepOutputs<float> expect = ref::run<float>(p.input, p.plan.reduction_order());
    CHECK(first_different(r.run.outputs[0], expect) == "");
    // the split decomposition is visible: the sequential reference differs
    CHECK(first_different(r.run.outputs[0], ref::run<float>(p.input, {})) != "");
    CHECK(contains(r.report, "every output inside"));

    o.fault = Fault::missing_xrdy;
    EmulateResult f = emulate(p, o);
    CHECK(f.verdict == Verdict::LIVELOCK);
    CHECK(f.run.entry == p.plan.xrdy(1, 0));
    CHECK(contains(f.run.detail, "CTA 1 (attn) ATTN_X(slice 1) has passed that instruction"));
}

TEST_CASE("k3 default run: CTAs become resident in the plan's launch order (interleaved at 2x4)") {
    EmulateOptions o;
    Prepared p = prepare(o, 1);
    REQUIRE(p.plan.params().interleave_ctas);  // 96 kda tasks reach past the 56 attn CTAs
    CHECK(contains(emulate(p, o).report, "launch order interleaved (runs of 2 attn CTAs and 2 CTAs from 56 on alternate launch CTAs, 56 pairs)"));
    const int need = p.plan.min_residency();
    // attn list 55 starts as launch CTA 109 and every gate waits for all 56 slices. (In index order 97
    // places do: band list 96, the first without a kda task, ends its pass and hands its place on, and
    // so does each band after it.)
    CHECK(need == p.plan.launch_cta_of(55) + 1);
    o.resident = need;
    EmulateResult ok = emulate(p, o);
    INFO(ok.report);
    CHECK(ok.verdict == Verdict::PASS);
    o.resident = need - 1;
    EmulateResult dead = emulate(p, o);
    INFO(dead.report);
    CHECK(dead.verdict == Verdict::DEADLOCK);
    CHECK(contains(dead.run.detail, "its producer CTA 55 (attn) ATTN_PART(slice 55) is not resident"));
}

TEST_CASE("the built-in k3 envelope is what measuring it again gives") {
    const Envelope* built = builtin_envelope("k3.R2.L4.nb4.s1");
    REQUIRE(built != nullptr);
    CHECK(builtin_envelope("small.R2.L4.nb4.s1") == nullptr);
    EmulateOptions o;
    o.envelope_orders = int(built->orders.size());  // measure, with the same orders
    Prepared p = prepare(o, 1);
    REQUIRE(p.envelope_source == "measured");
    const Envelope& fresh = *p.envelope;
    CHECK(fresh.fixture_digest == built->fixture_digest);
    CHECK(fresh.orders == built->orders);
    CHECK(fresh.plan_order == built->plan_order);
    CHECK(fresh.plan_order_reference_digest == built->plan_order_reference_digest);
    REQUIRE(fresh.outputs.size() == built->outputs.size());
    for (size_t k = 0; k < fresh.outputs.size(); ++k) {
        INFO(fresh.outputs[k].name);
        CHECK(fresh.outputs[k].max_rel_l2 == built->outputs[k].max_rel_l2);
        CHECK(fresh.outputs[k].min_frac_identical == built->outputs[k].min_frac_identical);
        CHECK(fresh.outputs[k].max_row_ulp == built->outputs[k].max_row_ulp);
        CHECK(fresh.outputs[k].max_abs == built->outputs[k].max_abs);
        REQUIRE(fresh.outputs[k].per_order.size() == built->outputs[k].per_order.size());
        for (size_t i = 0; i < fresh.outputs[k].per_order.size(); ++i)
            same_diff(fresh.outputs[k].per_order[i], built->outputs[k].per_order[i]);
        same_diff(fresh.plan_order_distance[k], built->plan_order_distance[k]);
    }
}

TEST_CASE("k3 with one request: 32-row chunks, their QK (q, k, g1 shares) and ONRM hand-offs, bit for bit") {
    EmulateOptions o;
    o.fixture.R = 1, o.fixture.L = 2;
    o.envelope_orders = -1;  // the envelope is the default run's business; this checks the plan's shape
    Prepared p = prepare(o, 1);
    REQUIRE(p.plan.n_chunks() == 4);  // PlanPolicy::k3_chunk_rows: 48 chunk tasks fit 132 CTAs
    bool sibling_wait = false;
    for (int cta = 0; cta < p.plan.blocks(); ++cta)
        for (int i = 0; i < int(p.plan.instrs(cta).size()); ++i)
            for (const Plan::Wait& w : p.plan.waits(cta, i)) sibling_wait |= w.entry.box == Mailbox::QK || w.entry.box == Mailbox::ONRM;
    CHECK(sibling_wait);
    bit_for_bit(p, o, {"random", "pct"});
}

TEST_CASE("k3 with three requests of four tokens: 32-row chunks two a CTA, in two kda teams, bit for bit") {
    EmulateOptions o;
    o.fixture.R = 3, o.fixture.L = 4;
    o.envelope_orders = -1;
    Prepared p = prepare(o, 1);
    REQUIRE(p.plan.n_chunks() == 4);  // 144 chunk tasks: two a CTA from kChunkMinLTwoACta tokens on
    REQUIRE(p.plan.n_kda_tasks() > p.plan.launch_blocks());
    CHECK(p.plan.kda_cta(0, 0, 0) == p.plan.kda_cta(2, 9, 0));  // task 0 and task 132 share CTA 0
    o.kda_teams = 2;  // as the NVIDIA kernel runs a CTA's two tasks
    bit_for_bit(p, o, {"random", "pct"});
}

TEST_CASE("k3 plain decode (R = L = 1): four chunk tasks a head, all on attn CTAs, bit for bit") {
    EmulateOptions o;
    o.fixture.R = 1, o.fixture.L = 1;
    o.envelope_orders = -1;  // the envelope is the default run's business; this checks the plan's shape
    Prepared p = prepare(o, 1);
    REQUIRE(p.plan.n_chunks() == 4);  // 48 tasks: each has a CTA of its own, whatever the tokens
    for (int h = 0; h < 12; ++h)
        for (int c = 0; c < 4; ++c) CHECK(p.plan.kda_cta(0, h, c) < p.plan.n_attn_ctas());  // no gemv CTA runs a task
    o.kda_teams = 2;
    bit_for_bit(p, o, {"random", "pct", "delay:kda"});
}

TEST_CASE("k3 at 32 rows: two attn CTAs a slice, the in_proj bands on every CTA, attn CTAs after their ATTN_X, bit for bit") {
    EmulateOptions o;
    o.fixture.R = 8, o.fixture.L = 4;
    o.envelope_orders = -1;  // the envelope is the default run's business; this checks the plan's shape
    Prepared p = prepare(o, 1);
    REQUIRE(p.plan.params().gemv_every_cta);  // PlanPolicy::k3_for from kSpreadGemvMinS rows
    REQUIRE(p.plan.attn_parts() == 2);        // rows 0..15 on CTAs 0..55, rows 16..31 on CTAs 56..111
    CHECK(p.plan.describe(p.plan.instrs(57)[0]) == "ATTN_PART(slice 1, rows 16..31)");
    REQUIRE(p.plan.gemv_cta(p.plan.n_groups() - 1) < p.plan.n_attn_ctas());  // the last bands sit on attn CTAs
    bit_for_bit(p, o, {"random", "pct", "delay:attn"});
    // a lost x flag: every CTA with a band waits for it, attn CTA 1's own band included
    o.fault = Fault::missing_xrdy;
    EmulateResult f = emulate(p, o);
    CHECK(f.verdict == Verdict::LIVELOCK);
    CHECK(f.run.entry == p.plan.xrdy(1, 0));
}
