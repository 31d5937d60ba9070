// Steps B (in_proj, #3) and C (f_b, #4): f32 accumulation, one bf16 rounding, the column split.
#include <doctest/doctest.h>

#include "core/rng.hpp"
#include "reference/reference.hpp"
#include "tests/reference/tiny_step.hpp"

using namespace monokda;
using namespace monokda::test;

TEST_SUITE("reference") {

TEST_CASE("in_proj: small integer products sum exactly, one row of proj per row of x") {
    Config c = tiny_config(4, 1, 1, 1, 1, 2, 1);  // N = 6
    StepInputs in = zero_inputs(c);
    // W[n, d] = n - d (small integers); x row 0 = [1, 2, 3, 4], row 1 = [-1, 0, 0, 2]
    for (int n = 0; n < c.N; ++n)
        for (int d = 0; d < 4; ++d) in.in_proj_w[size_t(n) * 4 + size_t(d)] = B(float(n - d));
    std::vector<bf16> x = {B(1), B(2), B(3), B(4), B(-1), B(0), B(0), B(2)};
    std::vector<bf16> proj = ref::in_proj<float>(in, ReductionOrder{}, x);
    REQUIRE(proj.size() == size_t(2 * c.N));
    for (int n = 0; n < c.N; ++n) {
        // row 0: sum_d (n-d)(d+1) = 10n - 20; row 1: -(n) + 2(n-3) = n - 6
        CHECK(F(proj[size_t(n)]) == float(10 * n - 20));
        CHECK(F(proj[size_t(c.N + n)]) == float(n - 6));
    }
}

TEST_CASE("in_proj accumulates in f32 and rounds once") {
    Config c = tiny_config(4, 1, 1, 1, 1, 1, 1);
    StepInputs in = zero_inputs(c);
    const float t = std::ldexp(1.0f, -9);
    // 1 + 3 * 2^-9 = 1 + 0.75 * 2^-7 rounds up to 1 + 2^-7; a bf16 accumulator would stay at 1
    std::vector<bf16> x = {B(1), B(t), B(t), B(t)};
    for (int d = 0; d < 4; ++d) in.in_proj_w[size_t(d)] = B(1);
    std::vector<bf16> proj = ref::in_proj<float>(in, ReductionOrder{}, x);
    CHECK(F(proj[0]) == 1.0f + std::ldexp(1.0f, -7));
}

TEST_CASE("f_b reads f_a from proj columns 4E..4E+F and writes g1 [S, E]") {
    Config c = tiny_config(4, 2, 2, 3, 1, 2, 1);  // E = 4, F = 3, N = 16 + 3 + 2 = 21
    StepInputs in = zero_inputs(c);
    std::vector<bf16> proj(size_t(c.S() * c.N), B(100.0f));  // everything outside f_a is a decoy
    for (int s = 0; s < 2; ++s)
        for (int f = 0; f < 3; ++f) proj[size_t(s * c.N + c.col_fa() + f)] = B(float(s + 1) * float(f + 1));
    for (int e = 0; e < 4; ++e)
        for (int f = 0; f < 3; ++f) in.f_b_w[size_t(e * 3 + f)] = B(float(e - f));
    std::vector<bf16> g1 = ref::f_b<float>(in, ReductionOrder{}, proj);
    REQUIRE(g1.size() == size_t(2 * 4));
    for (int s = 0; s < 2; ++s)
        for (int e = 0; e < 4; ++e) {
            // sum_f (s+1)(f+1)(e-f) = (s+1) * (6e - 8)
            CHECK(F(g1[size_t(s * 4 + e)]) == float((s + 1) * (6 * e - 8)));
        }
}

TEST_CASE("in_proj and f_b match an independent double GEMM to >= 99% bits and 1 ulp") {
    Config c = tiny_config(96, 2, 8, 16, 2, 2, 1);
    StepInputs in = zero_inputs(c);
    Rng rng(5);
    for (auto& w : in.in_proj_w) w = B(float(rng.normal() / std::sqrt(96.0)));
    for (auto& w : in.f_b_w) w = B(float(rng.normal() / 4));
    std::vector<bf16> x(size_t(c.S() * c.D));
    for (auto& v : x) v = B(float(rng.normal() * (rng.below(5) ? 1 : 10)));
    std::vector<bf16> proj = ref::in_proj<float>(in, ReductionOrder{}, x);
    std::vector<bf16> g1 = ref::f_b<float>(in, ReductionOrder{}, proj);
    int64_t same = 0, total = 0;
    for (int s = 0; s < c.S(); ++s) {
        for (int n = 0; n < c.N; ++n) {
            double acc = 0;
            for (int d = 0; d < c.D; ++d) acc += double(F(x[size_t(s * c.D + d)])) * F(in.in_proj_w[size_t(n * c.D + d)]);
            bf16 want = bf16::round(acc), got = proj[size_t(s * c.N + n)];
            CHECK(ulps(got, want) <= 1);
            same += got.bits == want.bits;
            ++total;
        }
        for (int e = 0; e < c.E(); ++e) {
            double acc = 0;
            for (int f = 0; f < c.F; ++f)
                acc += double(F(proj[size_t(s * c.N + c.col_fa() + f)])) * F(in.f_b_w[size_t(e * c.F + f)]);
            bf16 want = bf16::round(acc), got = g1[size_t(s * c.E() + e)];
            CHECK(ulps(got, want) <= 1);
            same += got.bits == want.bits;
            ++total;
        }
    }
    CHECK(double(same) / double(total) >= 0.99);
}
}
