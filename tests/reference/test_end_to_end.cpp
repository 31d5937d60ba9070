// A..F chained: f32 reference against the f64 oracle, the chain against its own stages, null
// requests, both layouts, and one production-shape (k3) step.
#include <doctest/doctest.h>

#include <cmath>

#include "core/compare.hpp"
#include "core/fixture_gen.hpp"
#include "reference/reference.hpp"
#include "tests/reference/tiny_step.hpp"

using namespace monokda;
using namespace monokda::test;

namespace {

Config small_step(int R, int L, int nb, bool bw, ConvLayout layout, uint64_t seed) {
    Config c = Config::preset("small");
    c.R = R; c.L = L; c.nb = nb; c.block_write = bw; c.conv_layout = layout; c.seed = seed;
    return c;
}

void check_oracle_agreement(const StepInputs& in) {
    const StepOutputs<float> f = ref::run<float>(in);
    TensorFile a = f.to_file(in.cfg), b = ref::run<double>(in).to_file(in.cfg);
    for (const TensorDiff& d : diff_files(a, b)) {
        CAPTURE(d.name);
        CHECK_FALSE(d.nan_mismatch);
        if (d.name == "prefix_out" || d.name == "blocks") {
            CHECK(d.frac_identical == 1.0);  // no sum on the way: exact in any precision
        } else if (d.name == "ssm_state") {
            CHECK(d.rel_l2 < 2e-3);  // carries 1-ulp bf16 flips of k, v, g1 upstream (2^-8 each)
        } else {
            // a few bf16 ulps of the row's scale (the differences are f32 rounding carried downstream)
            CHECK(d.max_row_ulp <= 2.0);
            CHECK(d.frac_identical > 0.5);
        }
    }
    // Stage by stage on the f32 run's own hand-offs (SPEC §5 teacher forcing): only each stage's own
    // arithmetic differs, so nearly every element is bit-identical.
    const ReductionOrder ord;
    auto close = [](const char* name, const std::vector<bf16>& a, const std::vector<bf16>& b, int64_t row) {
        CAPTURE(name);
        Tensor ta = Tensor::of(DType::BF16, {int64_t(a.size()) / row, row}, a);
        Tensor tb = Tensor::of(DType::BF16, {int64_t(b.size()) / row, row}, b);
        TensorDiff d = diff_tensors(name, ta, tb);
        CHECK(d.frac_identical >= 0.99);
        CHECK(d.max_row_ulp <= 1.0);
    };
    const Config& c = in.cfg;
    const StepOutputs<double> st = ref::teacher_forced<double>(in, ord, f);
    close("x", f.x, st.x, c.D);
    close("proj", f.proj, st.proj, c.N);
    close("g1", f.g1, st.g1, c.E());
    close("qkv", f.qkv, st.qkv, c.C);
    CHECK(same_bits(st.conv_state, f.conv_state));  // raw inputs: exact in any precision
    close("o", f.o, st.o, c.E());
    double num = 0, den = 0;
    for (size_t i = 0; i < st.ssm_state.size(); ++i) {
        num += (f.ssm_state[i] - st.ssm_state[i]) * (f.ssm_state[i] - st.ssm_state[i]);
        den += st.ssm_state[i] * st.ssm_state[i];
    }
    CHECK(std::sqrt(num / den) < 1e-5);
    close("core_out", f.core_out, st.core_out, c.E());
}

}  // namespace

TEST_SUITE("reference") {

TEST_CASE("f32 reference and f64 oracle agree within a few bf16 ulps at row scale") {
    struct Case { int R, L, nb; bool bw; ConvLayout layout; int nulls; };
    const Case cases[] = {{2, 4, 4, false, ConvLayout::sd, 0}, {3, 2, 7, true, ConvLayout::ds, 1},
                          {4, 1, 1, false, ConvLayout::sd, 0}, {2, 6, 8, false, ConvLayout::ds, 1},
                          {5, 3, 2, true, ConvLayout::sd, 2}};
    uint64_t seed = 1;
    for (const Case& k : cases) {
        CAPTURE(k.R);
        CAPTURE(k.L);
        CAPTURE(k.nb);
        FixtureOptions fo;
        fo.null_requests = k.nulls;
        StepInputs in = make_fixture(small_step(k.R, k.L, k.nb, k.bw, k.layout, seed++), fo);
        check_oracle_agreement(in);
    }
}

TEST_CASE("the chain's intermediates are the stages' own hand-offs") {
    StepInputs in = make_fixture(small_step(2, 4, 3, true, ConvLayout::sd, 12));
    StepOutputs<float> out = ref::run<float>(in);
    // each stage called on its own here, not through teacher_forced: run and teacher_forced share
    // one chain of stages, so only separate calls can catch that chain passing the wrong hand-off
    ReductionOrder ord;
    std::vector<bf16> p, b, x;
    ref::attnres<float>(in, ord, p, b, x);
    CHECK(same_bits(x, out.x));
    CHECK(same_bits(ref::in_proj<float>(in, ord, out.x), out.proj));
    CHECK(same_bits(ref::f_b<float>(in, ord, out.proj), out.g1));
    std::vector<bf16> qkv, cs, o;
    ref::short_conv<float>(in, out.proj, qkv, cs);
    CHECK(same_bits(qkv, out.qkv));
    std::vector<float> st;
    ref::recurrence<float>(in, ord, out.qkv, out.proj, out.g1, o, st);
    CHECK(same_bits(o, out.o));
    CHECK(st == out.ssm_state);
    CHECK(same_bits(ref::out_norm<float>(in, ord, out.o, out.proj), out.core_out));
    // and teacher forcing on the chain's own hand-offs gives the chain back
    const StepOutputs<float> tf = ref::teacher_forced<float>(in, ord, out);
    CHECK(same_bits(tf.core_out, out.core_out));
    CHECK(tf.ssm_state == out.ssm_state);
    // the chain is deterministic whatever the thread count
    StepOutputs<float> again = ref::run<float>(in);
    CHECK(same_bits(again.core_out, out.core_out));
    CHECK(again.ssm_state == out.ssm_state);
}

TEST_CASE("null-slot requests: zero o, zero core_out, no state written, F still runs") {
    FixtureOptions fo;
    fo.null_requests = 2;
    StepInputs in = make_fixture(small_step(4, 3, 2, false, ConvLayout::ds, 5), fo);
    const Config& c = in.cfg;
    StepOutputs<float> out = ref::run<float>(in);
    int null_requests = 0;
    for (int r = 0; r < c.R; ++r) {
        bool is_null = true;
        for (int t = 0; t < c.L; ++t) is_null = is_null && in.idx(r, t) <= 0;
        if (!is_null) continue;
        ++null_requests;
        for (int t = 0; t < c.L; ++t)
            for (int e = 0; e < c.E(); ++e) {
                const size_t i = size_t((r * c.L + t) * c.E() + e);
                CHECK(out.o[i].bits == 0x0000);
                CHECK(F(out.core_out[i]) == 0.0f);
            }
    }
    CHECK(null_requests == 2);
    // only live requests' slots change; slot 0 and the extra slots never do
    std::vector<bool> live(size_t(c.slots), false);
    for (int r = 0; r < c.R; ++r)
        for (int t = 0; t < c.L; ++t)
            if (in.idx(r, t) > 0) live[size_t(in.idx(r, t))] = true;
    const size_t per_slot = size_t(c.H * c.V * c.K);
    for (int s = 0; s < c.slots; ++s) {
        if (live[size_t(s)]) continue;
        CAPTURE(s);
        CHECK(std::equal(out.ssm_state.begin() + s * per_slot, out.ssm_state.begin() + (s + 1) * per_slot,
                         in.ssm_state.begin() + s * per_slot));
    }
    for (int s = 0; s < c.slots; ++s) {
        bool running = false;
        for (int r = 0; r < c.R; ++r) running = running || in.idx(r, 0) == s;
        if (running) continue;
        for (int j = 0; j < c.conv_len(); ++j)
            for (int ch = 0; ch < c.C; ch += 7)
                CHECK(out.conv_state[size_t(in.conv_at(s, j, ch))].bits == in.conv_state[size_t(in.conv_at(s, j, ch))].bits);
    }
}

TEST_CASE("sd and ds fixtures holding the same state give identical outputs") {
    StepInputs sd = make_fixture(small_step(3, 4, 5, true, ConvLayout::sd, 8));
    StepInputs ds = sd.with_conv_layout(ConvLayout::ds);
    StepOutputs<float> a = ref::run<float>(sd), b = ref::run<float>(ds);
    CHECK(same_bits(a.qkv, b.qkv));
    CHECK(same_bits(a.core_out, b.core_out));
    CHECK(a.ssm_state == b.ssm_state);
    for (int s = 0; s < sd.cfg.slots; ++s)
        for (int j = 0; j < sd.cfg.conv_len(); ++j)
            for (int ch = 0; ch < sd.cfg.C; ++ch)
                CHECK(a.conv_state[size_t(sd.conv_at(s, j, ch))].bits == b.conv_state[size_t(ds.conv_at(s, j, ch))].bits);
}

TEST_CASE("k3: production shape, block-write, null request; oracle agreement") {
    Config c = Config::preset("k3");
    c.R = 2; c.L = 4; c.nb = 4; c.block_write = true; c.seed = 2;
    FixtureOptions fo;
    fo.null_requests = 1;
    check_oracle_agreement(make_fixture(c, fo));
}
}
