// Hand-sized steps for the step-by-step tests: every tensor zero, every dim chosen by the test, so
// that the expected values can be worked out by hand.
#pragma once
#include <cmath>
#include <vector>

#include "core/bf16.hpp"
#include "core/step.hpp"

namespace monokda::test {

inline Config tiny_config(int D, int H, int K, int F, int R, int L, int nb = 1, int W = 4) {
    Config c;
    c.D = D; c.H = H; c.K = K; c.V = K; c.F = F; c.W = W;
    c.C = 3 * H * K;
    c.N = 4 * H * K + F + H;
    c.nb = nb; c.R = R; c.L = L;
    c.slots = R * L + 2;
    c.validate();
    return c;
}

// All zeros; request r's token t uses slot r*L + t + 1; num_accepted = L.
inline StepInputs zero_inputs(const Config& c) {
    StepInputs in;
    in.cfg = c;
    const size_t S = size_t(c.S()), D = size_t(c.D), E = size_t(c.E());
    const bf16 z = bf16::from_bits(0);
    in.prefix.assign(S * D, z);
    in.delta.assign(S * D, z);
    in.blocks.assign(S * 8 * D, z);
    in.res_norm_w.assign(D, z);
    in.res_proj_w.assign(D, z);
    in.input_norm_w.assign(D, z);
    in.in_proj_w.assign(size_t(c.N) * D, z);
    in.f_b_w.assign(E * size_t(c.F), z);
    in.conv_w.assign(size_t(c.C) * size_t(c.W), 0.0f);
    in.A_log.assign(size_t(c.H), 0.0f);
    in.dt_bias.assign(E, 0.0f);
    in.o_norm_w.assign(size_t(c.V), z);
    in.conv_state.assign(size_t(c.slots) * size_t(c.conv_len()) * size_t(c.C), z);
    in.ssm_state.assign(size_t(c.slots) * size_t(c.H) * size_t(c.V) * size_t(c.K), 0.0f);
    in.state_indices.resize(S);
    for (size_t i = 0; i < S; ++i) in.state_indices[i] = int32_t(i + 1);
    in.num_accepted.assign(size_t(c.R), c.L);
    in.validate_step();
    return in;
}

inline bf16 B(float v) { return bf16::round(v); }
inline float F(bf16 b) { return b.to_float(); }

// SiLU evaluated in double, rounded once to bf16: an independent model of rounding #5.
inline bf16 silu_bf16(double x) { return bf16::round(x / (1.0 + std::exp(-x))); }

// bf16 distance in ulps on the ordered line.
inline int ulps(bf16 a, bf16 b) { return std::abs(bf16_ordered(a.bits) - bf16_ordered(b.bits)); }

using monokda::same_bits;

}  // namespace monokda::test
