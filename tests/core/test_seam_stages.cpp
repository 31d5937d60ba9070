// Kernel v2's seam stages on the host (core/seam_stages.hpp), against values worked by hand: each
// chain's order (sums that lose a term one way and not another), sums from -0, the softmax's max and
// eps, P' and x rounded to bf16; and every stage of two rows at D = 8 in slices of 4, with small
// powers of two so that every value is exact.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/seam_stages.hpp"

using namespace monokda;

namespace {

std::vector<bf16> bf(std::initializer_list<float> v) {
    std::vector<bf16> out;
    for (float f : v) out.push_back(bf16::round(f));  // every value here is a bf16 exactly
    return out;
}

std::vector<float> xs(const std::vector<bf16>& v) {
    std::vector<float> out;
    for (bf16 b : v) out.push_back(b.to_float());
    return out;
}

const float k2p24 = 16777216.f;  // 2^24: adding 1 to it leaves it unchanged (ties to even)

}  // namespace

TEST_SUITE("core") {
TEST_CASE("PART and Σmixed²: one sequential chain from -0") {
    // 2^24 + 1 + 1 + 2 in order is 2^24 + 2; pairwise or backwards it is 2^24 + 4
    const float v[4] = {4096.f, 1.f, 1.f, 2.f}, wq[4] = {4096.f, 1.f, 1.f, 1.f};
    float out[2];
    seam_part(v, wq, 4, out);
    CHECK(out[1] == k2p24 + 2.f);
    CHECK(out[0] == k2p24 + 4.f);  // 2^24, 2^24, 2^24, 2^24 + 4
    // from -0: a slice of -0 against positive wq sums to -0 (from +0 it would be +0); Σv² is +0
    const float z[4] = {-0.f, -0.f, -0.f, -0.f}, one[4] = {1.f, 1.f, 1.f, 1.f};
    seam_part(z, one, 4, out);
    CHECK(std::signbit(out[1]));
    CHECK(out[1] == 0.f);
    CHECK(!std::signbit(out[0]));
    // Σm²: 2^24, 2^24, 2^24, 2^24 + 4 (backwards: 4 + 1 + 1 + 2^24 = 2^24 + 6)
    CHECK(seam_sumsq(v, 4) == k2p24 + 4.f);
    CHECK(std::signbit(seam_sumsq(z, 0)));
}

TEST_CASE("GATE: slices in order, logit = Σv·wq / rms with eps, softmax after the max") {
    // D 8, eps 0.5, three sources of two slices: rms = sqrt(Σv² / 8 + 0.5)
    //   source 0: Σv² 2 + 2 = 4 -> rms 1, Σv·wq 60 + 40 = 100: logit 100
    //   source 1: Σv² 12 + 16 = 28 -> rms 2, Σv·wq 100 + 98 = 198: logit 99
    //   source 2: Σv² 0 + 4 = 4 -> rms 1, Σv·wq -50 - 50: logit -100
    // max 100: e = {1, e^-1, e^-200 = 0 in f32}, Σe = 1 + e^-1 (without the max, e^100 is Inf)
    const float part[3][2][2] = {{{2, 60}, {2, 40}}, {{12, 100}, {16, 98}}, {{0, -50}, {4, -50}}};
    float wgt[4];
    seam_gate(&part[0][0][0], 2, 2, 8, 0.5f, wgt);
    const float e1 = 0.36787944117144233f;  // e^-1, rounded once
    CHECK(wgt[0] == 1.f);
    CHECK(wgt[1] == e1);
    CHECK(wgt[2] == 0.f);
    CHECK(wgt[3] == 1.f + e1);
}

TEST_CASE("MIX: Σ_i e_i·v_i in source order over Σe, sources a stride apart") {
    // sources of 2 columns, 3 apart; weights {1, 1/2, 1/2}, Σe 2
    //   column 0: (2 + 4/2 + 0/2) / 2 = 2
    //   column 1: (2^24 + 1 + 1) / 2 = 2^23 in order (backwards 2^24 + 2 over 2 is 2^23 + 1)
    const float v[8] = {2.f, k2p24, 7.f, 4.f, 2.f, 7.f, 0.f, 2.f};
    const float wgt[4] = {1.f, 0.5f, 0.5f, 2.f};
    float mixed[2];
    seam_mix(v, 3, 2, wgt, 2, mixed);
    CHECK(mixed[0] == 2.f);
    CHECK(mixed[1] == k2p24 / 2.f);
}

TEST_CASE("X: the slices' Σmixed² in order, 1/rms, and x rounded to bf16 once") {
    // 2^24 then eight 1s: 2^24 in order, so 1/rms = 2^-12 at D 1, eps 0 (backwards 2^24 + 8: not 2^-12)
    const float msq[9] = {k2p24, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f};
    CHECK(seam_rr(msq, 9, 1, 0.f) == 1.f / 4096.f);
    // D and eps: (2 + 2) / 8 + 3.5 = 4, 1/rms 1/2
    const float two[2] = {2.f, 2.f};
    CHECK(seam_rr(two, 2, 8, 3.5f) == 0.5f);
    // 3 · (1 + 2^-7) = 3 + 1.5 bf16 ulps: the tie goes to the even 3 + 2 ulps = 3.03125
    CHECK(seam_x(3.f, 1.f, 1.f + 1.f / 128.f).to_float() == 3.03125f);
    CHECK(seam_x(1.f, 0.5f, -0.5f).to_float() == -0.25f);
}

TEST_CASE("every stage of two rows, D 8 in slices of 4, nb 1, worked by hand") {
    // wq = 4 · 0.5 = 2; eps 3.25. Row 0: bank row b = (2 -2 2 2 | 0 0 0 0); P + delta =
    // (0, 2 + 2^-7, 0, 0 | 1 + 1, 0, 2, -2): 2 + 2^-7 is a bf16 tie, to the even 2, so
    // P' = (0 2 0 0 | 2 0 2 -2). Row 1: both negated. The bank's rows 1 .. 7 (64) are not sources.
    SeamInputs in;
    const float t = 1.f / 128.f;
    in.prefix = bf({0, 2, 0, 0, 1, 0, 2, -2, 0, -2, 0, 0, -1, 0, -2, 2});
    in.delta = bf({0, t, 0, 0, 1, 0, 0, 0, 0, -t, 0, 0, -1, 0, 0, 0});
    const std::vector<bf16> b0 = bf({2, -2, 2, 2, 0, 0, 0, 0}), b1 = bf({-2, 2, -2, -2, 0, 0, 0, 0});
    for (const std::vector<bf16>* b : {&b0, &b1}) {
        in.blocks.insert(in.blocks.end(), b->begin(), b->end());
        in.blocks.insert(in.blocks.end(), 7 * 8, bf16::round(64.f));
    }
    in.res_norm_w = bf({4, 4, 4, 4, 4, 4, 4, 4});
    in.res_proj_w = bf({0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
    in.input_norm_w = bf({3, 2, 1, 1, 5, 1, -1, 0.5});
    in.eps = 3.25f;
    const SeamStages st = seam_stages(in, 1, 4);
    REQUIRE(st.S == 2);
    REQUIRE(st.slices == 2);
    // LOAD
    CHECK(st.rows.wq == std::vector<float>(8, 2.f));
    CHECK(std::vector<float>(st.rows.src(0, 1), st.rows.src(0, 1) + 8) == std::vector<float>{0, 2, 0, 0, 2, 0, 2, -2});
    CHECK(std::vector<float>(st.rows.src(1, 0), st.rows.src(1, 0) + 8) == xs(b1));
    // PART [row][source][slice]{Σv², Σv·wq}: b (2 -2 2 2): 16, 2·4; P' (0 2 0 0): 4, 4, (2 0 2 -2): 12, 4
    CHECK(st.part == std::vector<float>{16, 8, 0, 0, 4, 4, 12, 4, 16, -8, 0, 0, 4, -4, 12, -4});
    // GATE: both sources Σv² 16, Σv·wq ±8: the same logit, so e = {1, 1}, Σe 2
    CHECK(st.wgt == std::vector<float>{1, 1, 2, 1, 1, 2});
    // MIX: (b + P') / 2; Σmixed² 3 a slice
    CHECK(st.mixed == std::vector<float>{1, 0, 1, 1, 1, 0, 1, -1, -1, 0, -1, -1, -1, 0, -1, 1});
    CHECK(st.msq == std::vector<float>{3, 3, 3, 3});
    // X: 1/rms = 1/sqrt(6/8 + 3.25) = 1/2; x = mixed / 2 · input_norm_w
    CHECK(st.rr == std::vector<float>{0.5f, 0.5f});
    CHECK(xs(st.x) == std::vector<float>{1.5, 0, 0.5, 0.5, 2.5, 0, -0.5, -0.25, -1.5, 0, -0.5, -0.5, -2.5, 0, 0.5, 0.25});
}

TEST_CASE("seam_stages refuses inputs that are not S rows of D, and slices that do not divide D") {
    SeamInputs in;
    in.prefix = in.delta = std::vector<bf16>(16);
    in.blocks = std::vector<bf16>(128);
    in.res_norm_w = in.res_proj_w = in.input_norm_w = std::vector<bf16>(8);
    CHECK(seam_stages(in, 1, 4).S == 2);
    CHECK_THROWS_AS(seam_stages(in, 1, 3), BadInput);
    CHECK_THROWS_AS(seam_stages(in, 9, 4), BadInput);
    in.blocks.pop_back();
    CHECK_THROWS_AS(seam_stages(in, 1, 4), BadInput);
}
}
