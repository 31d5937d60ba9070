// The production shape: the default run (k3, R 2, L 4, nb 4, 132 CTAs) passes, its outputs are the
// reference in the plan's order bit for bit and lie inside the envelope; and one fault at scale.
#include <doctest/doctest.h>

#include "emu_util.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

TEST_CASE("k3 default run") {
    EmulateOptions o;  // the defaults of `monokda emulate`
    Prepared p = prepare(o, 1);
    REQUIRE(p.plan.blocks() == 132);
    // the parallel fixture generator gives the sequential generator's values (digest from 762017c)
    CHECK(inputs_digest(p.inputs[0]) == "24fe53dceb957d69");
    EmulateResult r = emulate(p, o);
    INFO(r.report);
    REQUIRE(r.verdict == Verdict::PASS);
    const StepOutputs<float> expect = ref::run<float>(p.inputs[0], p.plan.reduction_order());
    CHECK(first_different(r.run.outputs[0], expect) == "");
    // the split decomposition is visible: the sequential reference differs
    CHECK(first_different(r.run.outputs[0], ref::run<float>(p.inputs[0], {})) != "");
    CHECK(contains(r.report, "every output inside"));

    o.fault = Fault::missing_xrdy;
    EmulateResult f = emulate(p, o);
    CHECK(f.verdict == Verdict::LIVELOCK);
    CHECK(f.run.entry == p.plan.xrdy(1));
    CHECK(contains(f.run.detail, "CTA 1 (attn) ATTN_X(slice 1) has passed that instruction"));
}
