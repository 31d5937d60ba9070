// Kernel v2's tail stages on the host (core/tail_stages.hpp), on values worked out by hand: a token
// of the recurrence, the decay, the l2 norms, the partial Σō² and an output; the stages against the
// reference on whole fixtures are the emulator's tests (tests/emulator/test_v2_machine.cpp).
#include <doctest/doctest.h>

#include <cmath>

#include "core/tail_stages.hpp"

using namespace monokda;

TEST_CASE("a token of the recurrence on one state row, by hand: decay, u, the update, o") {
    // S = [1, 2] decayed by [0.5, 1] -> [0.5, 2]; k̂ = [1, 0]: kS = 0.5; u = (1.5 - 0.5) · 0.5 = 0.5;
    // S += u · k̂ -> [1, 2]; q̂ = [0, 1]: o = 2
    float S[2] = {1.f, 2.f};
    const float decay[2] = {0.5f, 1.f}, kn[2] = {1.f, 0.f}, qn[2] = {0.f, 1.f};
    const bf16 v[1] = {bf16::round(1.5f)};
    bf16 o[1];
    tail_rec_token(ReductionOrder{}, S, 1, 2, decay, kn, qn, v, 0.5f, o);
    CHECK(S[0] == 1.f);
    CHECK(S[1] == 2.f);
    CHECK(o[0].to_float() == 2.f);
}

TEST_CASE("the decay, the l2 norms, a partial Σō² and a gated output, by hand") {
    // lb · sigmoid(1 · (0 + 0)) = -5 · 0.5: exp(-2.5)
    CHECK(tail_decay(1.f, bf16::round(0.f), 0.f, -5.f) == doctest::Approx(0.0820849986).epsilon(1e-6));
    // q = [3, 4]: |q| = 5, q̂ = q / 5 · 2^-1/2; k = [0, 2]: k̂ = [0, 1]
    const bf16 q[2] = {bf16::round(3.f), bf16::round(4.f)}, k[2] = {bf16::round(0.f), bf16::round(2.f)};
    float qn[2], kn[2];
    tail_l2(ReductionOrder{}, q, k, 2, 1e-6f, qn, kn);
    CHECK(qn[0] == doctest::Approx(0.6 / std::sqrt(2.0)).epsilon(1e-6));
    CHECK(qn[1] == doctest::Approx(0.8 / std::sqrt(2.0)).epsilon(1e-6));
    CHECK(kn[0] == 0.f);
    CHECK(kn[1] == doctest::Approx(1.0).epsilon(1e-6));
    const bf16 ob[3] = {bf16::round(1.f), bf16::round(-2.f), bf16::round(2.f)};
    CHECK(tail_sumsq(ob, 3) == 9.f);
    // Σō² 9 over V 3 (+ eps 0): rr = 1/√3; y = ((2 · rr) · 1.5) · sigmoid(0) = √3 / 2, rounded
    CHECK(tail_rr(9.f, 3, 0.f) == doctest::Approx(1.0 / std::sqrt(3.0)).epsilon(1e-6));
    CHECK(tail_out(ob[2], tail_rr(9.f, 3, 0.f), bf16::round(1.5f), bf16::round(0.f)).bits == bf16::round(float(std::sqrt(3.0) / 2)).bits);
}

TEST_CASE("a g1 element is its sum rounded once, in the order given") {
    const float fa[4] = {1.f, 1e8f, -1e8f, 1.f};
    const bf16 w[4] = {bf16::round(1.f), bf16::round(1.f), bf16::round(1.f), bf16::round(1.f)};
    // sequential: ((1 + 1e8) - 1e8) + 1 = 1 (the first 1 lost); pairwise: (1 + 1e8) + (-1e8 + 1) = 0
    CHECK(tail_g1(ReductionOrder{}, fa, w, 4).to_float() == 1.f);
    CHECK(tail_g1(ReductionOrder::parse("pairwise"), fa, w, 4).to_float() == 0.f);
}
