// The step's memory floor and the unfused chain's per-stage traffic, counted term by term against
// SPEC §2 and §3 (bench/step_floor.hpp).
#include "bench/step_floor.hpp"

namespace monokda::bench {

namespace {
constexpr int64_t kBf16 = 2, kF32 = 4, kI32 = 4;
}

int64_t FloorBytes::total() const {
    int64_t t = 0;
    for (const auto& [name, b] : terms()) t += b;
    return t;
}

std::vector<std::pair<std::string, int64_t>> FloorBytes::terms() const {
    return {{"in_proj_w", in_proj_w}, {"f_b_w", f_b_w},         {"small_weights", small_weights},
            {"sources", sources},     {"ssm_read", ssm_read},   {"ssm_write", ssm_write},
            {"conv_read", conv_read}, {"conv_write", conv_write}, {"outputs", outputs},
            {"indices", indices}};
}

FloorBytes step_floor_bytes(const Config& c) {
    const int64_t S = c.S(), R = c.R, L = c.L, D = c.D, E = c.E(), C = c.C, W = c.W;
    const int64_t state = int64_t(c.H) * c.V * c.K * kF32;  // one request's recurrent state, all local heads
    FloorBytes f;
    // the two projection weights: the bulk of the step, read once whatever S is
    f.in_proj_w = int64_t(c.N) * D * kBf16;
    f.f_b_w = E * c.F * kBf16;
    // gains and small parameters, read once
    f.small_weights = 3 * D * kBf16 + C * W * kF32 + int64_t(c.H) * kF32 + E * kF32 + int64_t(c.V) * kBf16;
    // AttnRes sources: prefix and delta rows, and the nb bank rows in use (row nb is written, not read)
    f.sources = S * (2 + c.nb) * D * kBf16;
    // recurrent state: read the last accepted token's state once a request, write one state a token
    f.ssm_read = R * state;
    f.ssm_write = S * state;
    // short-conv state: the W-1 entries of the window (the W-2 kept ones are among them), then the
    // whole slot of W-2+L entries written back
    f.conv_read = R * (W - 1) * C * kBf16;
    f.conv_write = R * (W - 2 + L) * C * kBf16;
    // prefix_out, the block row on block-write layers, core_out
    f.outputs = S * D * kBf16 + (c.block_write ? S * D * kBf16 : 0) + S * E * kBf16;
    f.indices = S * kI32 + R * kI32;
    return f;
}

const char* const kStageNames[6] = {"A attnres", "B in_proj", "C f_b", "D short_conv", "E recurrence", "F out_norm"};

StageBytes unfused_stage_bytes(const Config& c) {
    const int64_t S = c.S(), R = c.R, L = c.L, D = c.D, E = c.E(), C = c.C, W = c.W, N = c.N, F = c.F;
    const int64_t state = int64_t(c.H) * c.V * c.K * kF32;
    StageBytes b;
    // A: prefix, delta, nb bank rows, three gains in; prefix_out, (block row), x out
    b.stage[0] = S * (2 + c.nb) * D * kBf16 + 3 * D * kBf16 + S * D * kBf16 * (c.block_write ? 3 : 2);
    // B: weight and x in, proj out
    b.stage[1] = N * D * kBf16 + S * D * kBf16 + S * N * kBf16;
    // C: f_b_w and the f_a columns in, g1 out
    b.stage[2] = E * F * kBf16 + S * F * kBf16 + S * E * kBf16;
    // D: conv_w, window, the conv columns of proj in; qkv and the conv slot out
    b.stage[3] = C * W * kF32 + R * (W - 1) * C * kBf16 + S * C * kBf16 + S * C * kBf16 + R * (W - 2 + L) * C * kBf16;
    // E: q, k, v, g1, beta, gate parameters, initial states in; o and one state a token out
    b.stage[4] = S * (C + E + c.H) * kBf16 + int64_t(c.H) * kF32 + E * kF32 + R * state + S * E * kBf16 + S * state;
    // F: o, g2, o_norm_w in; core_out out
    b.stage[5] = 2 * S * E * kBf16 + int64_t(c.V) * kBf16 + S * E * kBf16;
    return b;
}

}  // namespace monokda::bench
