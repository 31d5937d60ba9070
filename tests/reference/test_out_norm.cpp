// Step F (gated output RMSNorm, #7): per row and head, over the bf16 o, gated by sigmoid(g2).
#include <doctest/doctest.h>

#include <cmath>

#include "core/rng.hpp"
#include "reference/reference.hpp"
#include "tests/reference/tiny_step.hpp"

using namespace monokda;
using namespace monokda::test;

TEST_SUITE("reference") {

TEST_CASE("output norm: each head normalised on its own, gated by sigmoid(g2) from proj columns 3E..4E") {
    Config c = tiny_config(4, 2, 2, 1, 1, 1, 1);  // E = 4, N = 19
    StepInputs in = zero_inputs(c);
    in.o_norm_w = {B(1.5f), B(-0.5f)};
    // head 0: o = [1, 1] (rms 1); head 1: o = [3, -3] (rms 3): both normalise to unit size
    std::vector<bf16> o = {B(1), B(1), B(3), B(-3)};
    std::vector<bf16> proj(size_t(c.N), B(0));
    // g2 = +100 (gate 1), -100 (gate 0), 0 (gate 1/2), +100
    const float g2[4] = {100, -100, 0, 100};
    for (int e = 0; e < 4; ++e) proj[size_t(c.col_g2() + e)] = B(g2[e]);
    proj[0] = B(-100);  // decoys in the q columns must not be read as g2
    std::vector<bf16> y = ref::out_norm<float>(in, ReductionOrder{}, o, proj);
    // by hand: y = (o / rms) * w * gate, rms including eps = 1e-5 (within half a bf16 ulp of 1)
    CHECK(F(y[0]) == 1.5f);
    CHECK(F(y[1]) == 0.0f);
    CHECK(F(y[2]) == 0.75f);  // (3/3) * 1.5 * 0.5: o_norm_w is shared by the heads
    CHECK(F(y[3]) == 0.5f);   // (-3/3) * -0.5 * 1
}

TEST_CASE("output norm of zero o is zero (a null request's rows)") {
    Config c = tiny_config(4, 2, 2, 1, 1, 1, 1);
    StepInputs in = zero_inputs(c);
    in.o_norm_w = {B(1), B(2)};
    std::vector<bf16> o(4, B(0)), proj(size_t(c.N), B(1));
    std::vector<bf16> y = ref::out_norm<float>(in, ReductionOrder{}, o, proj);
    for (bf16 v : y) CHECK(v.bits == 0x0000);
}

TEST_CASE("core_out is bit-identical to a literal f32 transcription of SPEC F") {
    Config c = tiny_config(4, 2, 4, 1, 1, 2, 1);
    StepInputs in = zero_inputs(c);
    Rng rng(8);
    for (auto& w : in.o_norm_w) w = B(float(1 + 0.3 * rng.normal()));
    std::vector<bf16> o(size_t(c.S() * c.E())), proj(size_t(c.S() * c.N));
    for (auto& v : o) v = B(float(rng.normal()));
    for (auto& v : proj) v = B(float(rng.normal() * 2));
    std::vector<bf16> y = ref::out_norm<float>(in, ReductionOrder{}, o, proj);
    const float eps = float(c.eps);
    for (int s = 0; s < c.S(); ++s)
        for (int h = 0; h < c.H; ++h) {
            const bf16* ob = &o[size_t(s * c.E() + h * 4)];
            const float ms = ((F(ob[0]) * F(ob[0]) + F(ob[1]) * F(ob[1])) + F(ob[2]) * F(ob[2])) + F(ob[3]) * F(ob[3]);
            const float rr = 1.0f / std::sqrt(ms / 4.0f + eps);
            for (int v = 0; v < 4; ++v) {
                const float g2 = F(proj[size_t(s * c.N + c.col_g2() + h * 4 + v)]);
                const float want = ((F(ob[v]) * rr) * F(in.o_norm_w[size_t(v)])) * (1.0f / (1.0f + float(std::exp(double(-g2)))));
                CHECK(y[size_t(s * c.E() + h * 4 + v)].bits == B(want).bits);
            }
        }
}

TEST_CASE("core_out matches an independent double model of step F, one rounding") {
    Config c = tiny_config(4, 2, 32, 1, 2, 2, 1);
    StepInputs in = zero_inputs(c);
    Rng rng(4);
    for (auto& w : in.o_norm_w) w = B(float(1 + 0.2 * rng.normal()));
    std::vector<bf16> o(size_t(c.S() * c.E())), proj(size_t(c.S() * c.N));
    for (auto& v : o) v = B(float(rng.normal() * 0.05));
    for (auto& v : proj) v = B(float(rng.normal() * 2));
    std::vector<bf16> y = ref::out_norm<float>(in, ReductionOrder{}, o, proj);
    int64_t same = 0, total = 0;
    for (int s = 0; s < c.S(); ++s)
        for (int h = 0; h < c.H; ++h) {
            double ms = 0;
            for (int v = 0; v < c.V; ++v) ms += std::pow(double(F(o[size_t(s * c.E() + h * c.V + v)])), 2);
            const double rr = 1 / std::sqrt(ms / c.V + 1e-5);
            for (int v = 0; v < c.V; ++v) {
                const double g2 = F(proj[size_t(s * c.N + c.col_g2() + h * c.V + v)]);
                const bf16 want = bf16::round(F(o[size_t(s * c.E() + h * c.V + v)]) * rr * F(in.o_norm_w[size_t(v)]) /
                                              (1 + std::exp(-g2)));
                const bf16 got = y[size_t(s * c.E() + h * c.V + v)];
                CHECK(ulps(got, want) <= 1);
                same += got.bits == want.bits;
                ++total;
            }
        }
    CHECK(double(same) / double(total) >= 0.98);
}
}
