// Every property holds on the reference, on steps that exercise it (several num_accepted, both
// conv layouts, block-write, null requests, pad rows), and none of them is vacuous (SKIP) there.
#include <doctest/doctest.h>

#include "core/fixture_gen.hpp"
#include "properties/properties.hpp"
#include "properties/target.hpp"

using namespace monokda;
using namespace monokda::props;

namespace {

StepInputs step(int R, int L, int nb, bool block_write, ConvLayout layout, uint64_t seed, int nulls = 0) {
    Config c = Config::preset("small");
    c.R = R; c.L = L; c.nb = nb; c.block_write = block_write; c.conv_layout = layout; c.seed = seed;
    FixtureOptions o;
    o.null_requests = nulls;
    StepInputs in = make_fixture(c, o);
    // make sure some request accepted more than one token and one accepted all of them
    in.num_accepted[0] = L;
    if (R > 1) in.num_accepted[1] = L > 1 ? 2 : 1;
    return in;
}

}  // namespace

TEST_SUITE("properties") {
TEST_CASE("every property passes on the reference and applies to the step") {
    const Target tg = make_target("reference");
    struct Case { const char* name; StepInputs in; };
    Case cases[] = {
        {"sd R3 L4 nb4", step(3, 4, 4, false, ConvLayout::sd, 3)},
        {"ds block-write R2 L3 nb7", step(2, 3, 7, true, ConvLayout::ds, 4)},
    };
    for (const Case& cs : cases) {
        const StepOutputs<float> base = tg.run(cs.in);
        for (const Property& p : all_properties()) {
            const Verdict v = run_property(p, tg, cs.in, base, 99);
            INFO(cs.name << ": " << p.name << ": " << to_string(v.kind) << " " << v.detail);
            CHECK(v.kind == Verdict::PASS);
        }
    }
}

TEST_CASE("properties pass on steps with null requests and a request without an initial state") {
    const Target tg = make_target("reference");
    StepInputs in = step(4, 3, 2, false, ConvLayout::sd, 5, 1);
    // a live request (slot 0 column live) whose initial-state column is "none"
    for (int r = 0; r < in.cfg.R; ++r)
        if (in.idx(r, 0) > 0) {
            in.num_accepted[size_t(r)] = 3;
            in.state_indices[size_t(r) * 3 + 2] = -1;
            break;
        }
    const StepOutputs<float> base = tg.run(in);
    for (const Property& p : all_properties()) {
        const Verdict v = run_property(p, tg, in, base, 7);
        INFO(p.name << ": " << to_string(v.kind) << " " << v.detail);
        CHECK(v.kind != Verdict::FAIL);
    }
}

TEST_CASE("a plain decode step (L = 1) passes the properties that apply") {
    const Target tg = make_target("reference");
    const StepInputs in = step(3, 1, 1, false, ConvLayout::sd, 6);
    const StepOutputs<float> base = tg.run(in);
    for (const Property& p : all_properties()) {
        const Verdict v = run_property(p, tg, in, base, 8);
        INFO(p.name << ": " << to_string(v.kind) << " " << v.detail);
        CHECK(v.kind != Verdict::FAIL);
    }
}
}
