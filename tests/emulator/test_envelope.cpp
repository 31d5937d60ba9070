// The reduction-order envelope: measured from the reference's own orders, saved and read back, and
// a check that fires on outputs moved further from the oracle than reordering alone moves them.
#include <doctest/doctest.h>

#include <cstdio>
#include <unistd.h>

#include <fstream>

#include "core/fixture_gen.hpp"
#include "emu_util.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

namespace {

const TensorFile& small_oracle();
const Envelope& small_envelope() {
    static Envelope e = [] {
        Prepared& p = small_prepared();
        Envelope env = build_envelope(p.inputs[0], default_envelope_orders(12));
        const TensorFile ref = p.refs[0].to_file(p.inputs[0].cfg);
        env.plan_order = p.plan.reduction_order().str();
        env.plan_order_reference_digest = file_digest(ref);
        env.plan_order_distance = envelope_distances(env, ref, small_oracle());
        return env;
    }();
    return e;
}
const TensorFile& small_oracle() {
    static TensorFile f = ref::run<double>(small_prepared().inputs[0], {}).to_file(small_prepared().inputs[0].cfg);
    return f;
}

}  // namespace

TEST_CASE("every order's own distance lies inside, and so does the plan's order") {
    const Envelope& env = small_envelope();
    REQUIRE(env.outputs.size() == 7);
    CHECK(env.orders.size() == 12);
    for (const auto& b : env.outputs) {
        REQUIRE(b.per_order.size() == 12);
        for (const auto& d : b.per_order) {
            CHECK(d.rel_l2 <= b.max_rel_l2);
            CHECK(d.frac_identical >= b.min_frac_identical);
        }
    }
    Prepared& p = small_prepared();
    for (const auto& c : check_envelope(env, p.refs[0].to_file(p.inputs[0].cfg), small_oracle())) {
        INFO(c.name, ": ", c.why);
        CHECK(c.inside);
    }
}

TEST_CASE("the check fires on outputs moved beyond the envelope, and only on those") {
    Prepared& p = small_prepared();
    StepOutputs<float> moved = p.refs[0];
    // a planted error in core_out: a quarter of the elements off by 8 bf16 ulps
    for (size_t i = 0; i < moved.core_out.size(); i += 4)
        moved.core_out[i] = bf16::from_bits(uint16_t(moved.core_out[i].bits + 8));
    auto checks = check_envelope(small_envelope(), moved.to_file(p.inputs[0].cfg), small_oracle());
    for (const auto& c : checks) {
        INFO(c.name, ": ", c.why);
        CHECK(c.inside == (c.name != "core_out"));
    }
    // a state off by a relative 1e-3 in one slot
    StepOutputs<float> st = p.refs[0];
    for (size_t i = 0; i < st.ssm_state.size(); i += 3) st.ssm_state[i] *= 1.001f;
    for (const auto& c : check_envelope(small_envelope(), st.to_file(p.inputs[0].cfg), small_oracle()))
        CHECK(c.inside == (c.name != "ssm_state"));
}

TEST_CASE("saved and read back unchanged; bad files are bad input") {
    const Envelope& env = small_envelope();
    const std::string path = "/tmp/monokda_test_envelope_" + std::to_string(::getpid()) + ".json";
    write_envelope(path, env);
    Envelope back = read_envelope(path);
    CHECK(back.fixture_digest == env.fixture_digest);
    CHECK(back.fixture_digest == inputs_digest(small_prepared().inputs[0]));
    CHECK(back.orders == env.orders);
    CHECK(back.rel_margin == env.rel_margin);
    CHECK(back.plan_order == env.plan_order);
    CHECK(back.plan_order_reference_digest == env.plan_order_reference_digest);
    CHECK(back.plan_order_distance.size() == env.plan_order_distance.size());
    REQUIRE(back.outputs.size() == env.outputs.size());
    for (size_t i = 0; i < env.outputs.size(); ++i) {
        CHECK(back.outputs[i].name == env.outputs[i].name);
        CHECK(back.outputs[i].max_rel_l2 == env.outputs[i].max_rel_l2);
        CHECK(back.outputs[i].min_frac_identical == env.outputs[i].min_frac_identical);
        CHECK(back.outputs[i].max_row_ulp == env.outputs[i].max_row_ulp);
        CHECK(back.outputs[i].per_order.size() == env.outputs[i].per_order.size());
    }
    {
        std::ofstream f(path);
        f << "{\"format\": \"monokda-envelope\", \"format_version\": 1}";
    }
    CHECK_THROWS_AS(read_envelope(path), BadInput);
    {
        std::ofstream f(path);
        f << "not json";
    }
    CHECK_THROWS_AS(read_envelope(path), BadInput);
    std::remove(path.c_str());
    CHECK_THROWS_AS(read_envelope(path), BadInput);
}

TEST_CASE("an envelope too tight for the plan's order gives OUT_OF_ENVELOPE; another fixture's is refused") {
    Envelope tight = small_envelope();
    for (auto& b : tight.outputs) {
        b.max_rel_l2 = 0;
        b.max_abs = 0;
        b.max_row_ulp = 0;
    }
    tight.rel_margin = 0;
    tight.row_ulp_margin = 0;
    const std::string path = "/tmp/monokda_test_tight_" + std::to_string(::getpid()) + ".json";
    write_envelope(path, tight);
    EmulateOptions o = small_options();
    o.envelope_orders = 0;
    o.envelope_in = path;
    Prepared p = prepare(o, 1);
    EmulateResult r = emulate(p, o);
    INFO(r.report);
    CHECK(r.verdict == Verdict::OUT_OF_ENVELOPE);
    CHECK(contains(r.report, "OUTSIDE"));
    CHECK(contains(r.run.detail, "ssm_state"));  // the state is never identical to the f64 oracle

    EmulateOptions other = o;
    other.fixture.seed = 2;
    CHECK_THROWS_AS(prepare(other, 1), BadInput);
    std::remove(path.c_str());
}
