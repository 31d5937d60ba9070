// Step A (AttnRes seam): prefix_out (#1), block write, source mixing, x (#2).
#include <doctest/doctest.h>

#include <cmath>

#include "core/rng.hpp"
#include "reference/reference.hpp"
#include "tests/reference/tiny_step.hpp"

using namespace monokda;
using namespace monokda::test;

namespace {

struct SeamOut {
    std::vector<bf16> prefix_out, blocks, x;
};

SeamOut seam(const StepInputs& in) {
    SeamOut o;
    ref::attnres<float>(in, ReductionOrder{}, o.prefix_out, o.blocks, o.x);
    return o;
}

// Step A written out in double from SPEC §3 A, independently of the reference: rounding #1 on the
// prefix, keys never rounded, max-subtracted softmax, one rounding of x.
std::vector<double> x_model(const StepInputs& in, int s) {
    const Config& c = in.cfg;
    const int D = c.D, nb = c.nb;
    std::vector<std::vector<double>> v(size_t(nb + 1), std::vector<double>(size_t(D)));
    for (int d = 0; d < D; ++d) {
        for (int i = 0; i < nb; ++i) v[size_t(i)][size_t(d)] = F(in.blocks[(size_t(s) * 8 + size_t(i)) * size_t(D) + size_t(d)]);
        const size_t e = size_t(s) * size_t(D) + size_t(d);
        v[size_t(nb)][size_t(d)] = F(bf16::round(F(in.prefix[e]) + F(in.delta[e])));
    }
    std::vector<double> logit(size_t(nb + 1));
    for (int i = 0; i <= nb; ++i) {
        double ss = 0, dot = 0;
        for (int d = 0; d < D; ++d) {
            ss += v[size_t(i)][size_t(d)] * v[size_t(i)][size_t(d)];
            dot += v[size_t(i)][size_t(d)] * F(in.res_norm_w[size_t(d)]) * F(in.res_proj_w[size_t(d)]);
        }
        logit[size_t(i)] = dot / std::sqrt(ss / D + c.eps);
    }
    double m = logit[0];
    for (double l : logit) m = std::max(m, l);
    double den = 0;
    std::vector<double> p(size_t(nb + 1));
    for (int i = 0; i <= nb; ++i) den += p[size_t(i)] = std::exp(logit[size_t(i)] - m);
    std::vector<double> mixed(size_t(D), 0.0);
    double ms = 0;
    for (int d = 0; d < D; ++d) {
        for (int i = 0; i <= nb; ++i) mixed[size_t(d)] += p[size_t(i)] * v[size_t(i)][size_t(d)];
        mixed[size_t(d)] /= den;
        ms += mixed[size_t(d)] * mixed[size_t(d)];
    }
    std::vector<double> x(static_cast<size_t>(D));
    for (int d = 0; d < D; ++d) x[size_t(d)] = mixed[size_t(d)] / std::sqrt(ms / D + c.eps) * F(in.input_norm_w[size_t(d)]);
    return x;
}

void set_row(std::vector<bf16>& t, size_t offset, std::initializer_list<float> vals) {
    size_t i = offset;
    for (float v : vals) t[i++] = B(v);
}

}  // namespace

TEST_SUITE("reference") {

TEST_CASE("prefix_out is one rounding of P + delta, ties to even") {
    Config c = tiny_config(4, 1, 1, 1, 1, 1, 1);
    StepInputs in = zero_inputs(c);
    const float u8 = std::ldexp(1.0f, -8), u7 = std::ldexp(1.0f, -7), u9 = std::ldexp(1.0f, -9);
    set_row(in.prefix, 0, {1.0f, 1.0f + u7, 3.0f, -2.0f});
    set_row(in.delta, 0, {u8, u8, u9, -u7});
    SeamOut o = seam(in);
    // 1 + 2^-8: halfway, down to the even 1.  (1 + 2^-7) + 2^-8: halfway, up to the even 1 + 2^-6.
    CHECK(o.prefix_out[0].bits == B(1.0f).bits);
    CHECK(o.prefix_out[1].bits == B(1.0f + 2 * u7).bits);
    CHECK(F(o.prefix_out[1]) == 1.0f + std::ldexp(1.0f, -6));
    // 3 + 2^-9: below half an ulp (2^-7), stays 3.  -2 - 2^-7: halfway, to the even -2.
    CHECK(F(o.prefix_out[2]) == 3.0f);
    CHECK(F(o.prefix_out[3]) == -2.0f);
}

TEST_CASE("block-write copies prefix_out to bank row nb and nothing else") {
    for (bool bw : {true, false}) {
        CAPTURE(bw);
        Config c = tiny_config(4, 1, 1, 1, 1, 2, 2);
        c.block_write = bw;
        StepInputs in = zero_inputs(c);
        for (size_t i = 0; i < in.blocks.size(); ++i) in.blocks[i] = B(float(i % 97) - 40.0f);
        for (size_t i = 0; i < in.prefix.size(); ++i) in.prefix[i] = B(0.5f * float(i) + 1.0f);
        for (size_t i = 0; i < in.delta.size(); ++i) in.delta[i] = B(0.25f);
        SeamOut o = seam(in);
        for (int s = 0; s < c.S(); ++s)
            for (int row = 0; row < 8; ++row)
                for (int d = 0; d < c.D; ++d) {
                    const size_t bi = (size_t(s) * 8 + size_t(row)) * size_t(c.D) + size_t(d);
                    const size_t pi = size_t(s) * size_t(c.D) + size_t(d);
                    // expected by hand: P' = P + 0.25 (exact for these values)
                    const float pp = 0.5f * float(pi) + 1.0f + 0.25f;
                    CHECK(F(o.prefix_out[pi]) == pp);
                    if (bw && row == c.nb) CHECK(o.blocks[bi].bits == o.prefix_out[pi].bits);
                    else CHECK(o.blocks[bi].bits == in.blocks[bi].bits);
                }
    }
}

TEST_CASE("identical sources mix to the source") {
    for (int nb : {1, 3, 8}) {
        CAPTURE(nb);
        Config c = tiny_config(4, 1, 1, 1, 1, 1, nb);
        StepInputs in = zero_inputs(c);
        const float v[4] = {0.5f, -1.0f, 2.0f, 0.25f};
        for (int d = 0; d < 4; ++d) {
            in.prefix[size_t(d)] = B(v[d]);
            for (int i = 0; i < nb; ++i) in.blocks[size_t(i) * 4 + size_t(d)] = B(v[d]);
            in.res_norm_w[size_t(d)] = B(1.0f);
            in.res_proj_w[size_t(d)] = B(0.75f * float(d) - 1.0f);
            in.input_norm_w[size_t(d)] = B(1.0f);
        }
        SeamOut o = seam(in);
        // mixed = v, so x = v / rms(v): rms = sqrt((0.25 + 1 + 4 + 0.0625) / 4)
        const double rms = std::sqrt((0.25 + 1.0 + 4.0 + 0.0625) / 4.0 + 1e-5);
        for (int d = 0; d < 4; ++d) CHECK(o.x[size_t(d)].bits == bf16::round(double(v[d]) / rms).bits);
    }
}

TEST_CASE("softmax is max-subtracted: a dominant logit selects its source without overflow") {
    Config c = tiny_config(4, 1, 1, 1, 1, 1, 1);
    StepInputs in = zero_inputs(c);
    // v0 = [1,1,1,1], v1 = P' = [-1,-1,-1,-1]; wq = 64 everywhere: logits about +256 and -256.
    // exp(256) overflows f32, so only the max-subtracted form gives the weights (1, 0).
    for (int d = 0; d < 4; ++d) {
        in.blocks[size_t(d)] = B(1.0f);
        in.prefix[size_t(d)] = B(-1.0f);
        in.res_norm_w[size_t(d)] = B(1.0f);
        in.res_proj_w[size_t(d)] = B(64.0f);
        in.input_norm_w[size_t(d)] = B(2.0f);
    }
    SeamOut o = seam(in);
    for (int d = 0; d < 4; ++d) CHECK(F(o.x[size_t(d)]) == 2.0f);  // normalize([1,1,1,1]) * 2
}

TEST_CASE("keys are RMS-normalised before the score, the mixture is normalised after") {
    Config c = tiny_config(4, 1, 1, 1, 1, 1, 1);
    StepInputs in = zero_inputs(c);
    // v0 = [4,0,0,0] (rms 2), v1 = [0,1,0,0] (rms 1/2); wq = [1, 2, 0, 0]:
    // logit0 = 4 * 1/2 = 2, logit1 = 2 * 2 = 4 (up to eps). Unnormalised keys would score 4 and 2.
    set_row(in.blocks, 0, {4, 0, 0, 0});
    set_row(in.prefix, 0, {0, 1, 0, 0});
    set_row(in.res_norm_w, 0, {1, 1, 1, 1});
    set_row(in.res_proj_w, 0, {1, 2, 0, 0});
    set_row(in.input_norm_w, 0, {1, 1, 1, 1});
    SeamOut o = seam(in);
    // by hand: p = softmax(2, 4) = (1, e^2)/(1 + e^2); mixed = [4 p0, p1, 0, 0]; x = mixed / rms(mixed)
    const double e2 = std::exp(2.0), p0 = 1 / (1 + e2), p1 = e2 / (1 + e2);
    const double m0 = 4 * p0, m1 = p1, rms = std::sqrt((m0 * m0 + m1 * m1) / 4 + 1e-5);
    CHECK(ulps(o.x[0], bf16::round(m0 / rms)) <= 1);
    CHECK(ulps(o.x[1], bf16::round(m1 / rms)) <= 1);
    CHECK(o.x[2].bits == 0);
    CHECK(o.x[3].bits == 0);
    // the swapped (unnormalised) weights would give x0 > x1
    CHECK(F(o.x[0]) < F(o.x[1]));
}

TEST_CASE("the mix sums bank rows first and the prefix last, left to right") {
    Config c = tiny_config(4, 1, 1, 1, 1, 1, 2);
    StepInputs in = zero_inputs(c);
    // wq = 0: every logit is 0, every weight 1. Column 0 holds 2^24, 1 and -2^24 in source order:
    // ((2^24 + 1) + -2^24) = 0 in f32, while any order that starts from the prefix gives 1.
    const float big = 16777216.0f;
    set_row(in.blocks, 0, {big, 1, 0, 0});      // v0 = bank row 0
    set_row(in.blocks, 4, {1, 1, 0, 0});        // v1 = bank row 1
    set_row(in.prefix, 0, {-big, 1, 0, 0});     // v2 = P'
    set_row(in.input_norm_w, 0, {1, 1, 1, 1});
    SeamOut o = seam(in);
    CHECK(o.x[0].bits == 0x0000);
    CHECK(F(o.x[1]) == 2.0f);  // mixed = [0, 1, 0, 0]: rms 1/2
}

TEST_CASE("x is bit-identical to a literal f32 transcription of SPEC A (sequential sums)") {
    // Same operations in the same order as SPEC writes them: 1/sqrt(.) then a product for the key
    // norm, exp(logit - max), the division by the weight sum last, (mixed * rr) * w, one rounding.
    Config c = tiny_config(8, 1, 1, 1, 2, 1, 3);
    StepInputs in = zero_inputs(c);
    Rng rng(31);
    for (auto& b : in.blocks) b = B(float(rng.normal() * 3));
    for (auto& b : in.prefix) b = B(float(rng.normal()));
    for (auto& b : in.delta) b = B(float(rng.normal()));
    for (auto& b : in.res_norm_w) b = B(float(1 + 0.3 * rng.normal()));
    for (auto& b : in.res_proj_w) b = B(float(rng.normal()));
    for (auto& b : in.input_norm_w) b = B(float(1 + 0.3 * rng.normal()));
    SeamOut o = seam(in);
    const int D = 8, nb = 3;
    const float eps = float(c.eps);
    for (int s = 0; s < 2; ++s) {
        float v[4][8];
        for (int d = 0; d < D; ++d) {
            for (int i = 0; i < nb; ++i) v[i][d] = F(in.blocks[size_t((s * 8 + i) * D + d)]);
            v[nb][d] = F(B(F(in.prefix[size_t(s * D + d)]) + F(in.delta[size_t(s * D + d)])));
        }
        float logit[4], e[4];
        for (int i = 0; i <= nb; ++i) {
            float ss = v[i][0] * v[i][0], dot = v[i][0] * (F(in.res_norm_w[0]) * F(in.res_proj_w[0]));
            for (int d = 1; d < D; ++d) {
                ss = ss + v[i][d] * v[i][d];
                dot = dot + v[i][d] * (F(in.res_norm_w[size_t(d)]) * F(in.res_proj_w[size_t(d)]));
            }
            const float r = 1.0f / std::sqrt(ss / float(D) + eps);
            logit[i] = dot * r;
        }
        const float m = std::max(std::max(logit[0], logit[1]), std::max(logit[2], logit[3]));
        for (int i = 0; i <= nb; ++i) e[i] = std::exp(logit[i] - m);
        const float den = ((e[0] + e[1]) + e[2]) + e[3];
        float mixed[8], ms = 0;
        for (int d = 0; d < D; ++d) {
            mixed[d] = (((e[0] * v[0][d] + e[1] * v[1][d]) + e[2] * v[2][d]) + e[3] * v[3][d]) / den;
            ms = d ? ms + mixed[d] * mixed[d] : mixed[d] * mixed[d];
        }
        const float rr = 1.0f / std::sqrt(ms / float(D) + eps);
        for (int d = 0; d < D; ++d)
            CHECK(o.x[size_t(s * D + d)].bits == B((mixed[d] * rr) * F(in.input_norm_w[size_t(d)])).bits);
    }
}

TEST_CASE("x matches an independent double model of step A: one rounding, >= 99% identical") {
    // loud and quiet rows, 1..8 sources: a second rounding or a misplaced one drops far below this
    int64_t total = 0, same = 0;
    for (int nb : {1, 2, 5, 8}) {
        Config c = tiny_config(64, 1, 1, 1, 2, 3, nb);
        StepInputs in = zero_inputs(c);
        Rng rng(uint64_t(nb) * 77);
        for (auto& b : in.blocks) b = B(float(rng.normal() * (rng.below(4) ? 1.0 : 10.0)));
        for (auto& b : in.prefix) b = B(float(rng.normal()));
        for (auto& b : in.delta) b = B(float(0.5 * rng.normal()));
        for (auto& b : in.res_norm_w) b = B(float(1 + 0.1 * rng.normal()));
        for (auto& b : in.res_proj_w) b = B(float(rng.normal() / 8));
        for (auto& b : in.input_norm_w) b = B(float(1 + 0.1 * rng.normal()));
        SeamOut o = seam(in);
        for (int s = 0; s < c.S(); ++s) {
            std::vector<double> x = x_model(in, s);
            for (int d = 0; d < c.D; ++d) {
                bf16 want = bf16::round(x[size_t(d)]);
                bf16 got = o.x[size_t(s) * size_t(c.D) + size_t(d)];
                CHECK(ulps(got, want) <= 1);
                same += got.bits == want.bits;
                ++total;
            }
        }
    }
    CHECK(double(same) / double(total) >= 0.99);
}
}
