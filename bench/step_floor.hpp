// The floor of issue 6: the fewest bytes one step must move through device memory (every input read
// once, every output written once, intermediates never), counted term by term against SPEC §2, and the
// per-stage traffic of the unfused chain (SPEC §3 A–F), used to turn stage times into bandwidths.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"

namespace monokda::bench {

struct FloorBytes {
    int64_t in_proj_w = 0;      // N·D bf16
    int64_t f_b_w = 0;          // E·F bf16
    int64_t small_weights = 0;  // res_norm_w, res_proj_w, input_norm_w, conv_w, A_log, dt_bias, o_norm_w
    int64_t sources = 0;        // prefix, delta, block rows 0..nb-1
    int64_t ssm_read = 0;       // R·H·V·K f32: one initial state a live request
    int64_t ssm_write = 0;      // S·H·V·K f32: one state a token
    int64_t conv_read = 0;      // R·(W-1)·C bf16: the window a request reads
    int64_t conv_write = 0;     // R·(W-2+L)·C bf16: the whole slot rewritten
    int64_t outputs = 0;        // prefix_out, the block row (block-write layers), core_out
    int64_t indices = 0;        // state_indices, num_accepted
    int64_t total() const;
    // (name, bytes) in the order above, for reports
    std::vector<std::pair<std::string, int64_t>> terms() const;
};

// Every request is live and every token has a slot (the benchmark's step); cfg.S() rows.
FloorBytes step_floor_bytes(const Config& cfg);

// Device-memory traffic of each unfused stage A..F as the six kernels must move it at least
// (their inputs from memory, their outputs to memory; the hand-offs count on both sides).
struct StageBytes {
    int64_t stage[6] = {0, 0, 0, 0, 0, 0};
};
StageBytes unfused_stage_bytes(const Config& cfg);
extern const char* const kStageNames[6];  // "A attnres", "B in_proj", ...

}  // namespace monokda::bench
