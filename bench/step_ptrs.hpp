// Device pointers of one step's tensors (SPEC §2), contiguous in the layouts SPEC §2 gives; plain
// C++ so that host-only code (the fused kernel's adapter) can use them without GPU headers.
#pragma once
#include <cstdint>

#include "core/bf16.hpp"

namespace monokda::bench {

struct StepPtrs {
    const bf16 *prefix, *delta;
    bf16* blocks;
    const bf16 *res_norm_w, *res_proj_w, *input_norm_w, *in_proj_w, *f_b_w, *o_norm_w;
    const float *conv_w, *A_log, *dt_bias;
    bf16* conv_state;
    float* ssm_state;
    const int32_t *state_indices, *num_accepted;
    bf16 *prefix_out, *x, *proj, *g1, *qkv, *o, *core_out;
};

// Room for the largest step of a run.
struct SetCapacity {
    int rows = 64, requests = 64, slots = 66, conv_len = 10;
};

}  // namespace monokda::bench
