// What the launcher hands the kernel: one POD struct of pointers, strides and step values, the
// error record the kernel fills when it refuses or gives up, and the production shape it is
// specialised on. Shared by the kernel and its launcher (both compiled by nvcc / hipcc).
#pragma once
#include <cstdint>

#include "kernels/vendor/gpu.hpp"  // first: core/bf16.hpp uses the vendor's __forceinline__
#include "core/bf16.hpp"
#include "core/plan_policy.hpp"  // PlanPolicy::kChunkRows
#include "core/shape.hpp"

namespace monokda::gpu {

// SPEC §1's production shape (core/shape.hpp), with the plan's k3 parameters (core/plan_policy.hpp
// PlanPolicy::preset("k3")). The launcher refuses a config or plan that differs.
namespace k3 {
constexpr int D = kProductionShape.D, H = kProductionShape.H, K = kProductionShape.K, V = kProductionShape.V,
              E = kProductionShape.E(), F = kProductionShape.F, N = kProductionShape.N(), C = kProductionShape.C(),
              W = kProductionShape.W;
constexpr int kSlice = 128;              // columns of D per attn CTA
constexpr int kAttn = D / kSlice;        // 56 attn slices (one or two CTAs each: KdaArgs::attn_parts)
constexpr int kGroupRows = 16;           // in_proj rows per gemv group
constexpr int kGroups = N / kGroupRows;  // 393
// state rows a kda task: a chunk of a head, or the whole head (PlanPolicy::k3_chunk_rows chooses by
// the step's shape; docs/decisions/0001-kda-chunk-rows.md)
constexpr int kChunkRowsQuarter = PlanPolicy::kChunkRows, kChunkRowsHead = V;
static_assert(kChunkRowsQuarter * 4 == V, "the plan's chunks are a quarter of a head");
constexpr int kMaxS = 64, kMaxL = 8, kMaxNb = 8;
constexpr int kMaxAttnParts = 2;  // XRDY entries a slice the gemv pass reads (kda_gemv_batch.hpp)
}  // namespace k3

constexpr int kThreads = 256;
// per CTA: [0] entry, [1] x seen (the x copies of the steps ahead issued), [2 + step] weight step
// landed (the CTA's last pass), [30] the first XRDY wait of the gemv pass over, [31] the CTA's first
// pass's end, [32 + k] end of the CTA's k-th instruction (other than gemv; the last slot: the last
// instruction), [61] SM id + 1, [62] the last pass's end, [63] exit
constexpr int kTraceWords = 64, kTraceXFirst = 30, kTraceFirstPassEnd = 31, kTraceInstr = 32, kTraceInstrs = 29;

enum KdaErrorCode : uint32_t {
    kErrNone = 0,
    kErrTimeout = 1,         // a poll gave up: box/entry name the mailbox entry
    kErrSlotRange = 2,       // detail0 = r·L + t, detail1 = value
    kErrSlotDuplicate = 3,   // detail0 = r·L + t of the second occurrence, detail1 = value
    kErrAcceptedRange = 4,   // detail0 = r, detail1 = value
    kErrBadOpcode = 5,       // detail0 = opcode
    kErrGrid = 6,            // detail0 = gridDim.x
};

// Written once per launch by the first CTA that fails (compare-and-swap on code).
struct KdaErrorRecord {
    uint32_t code, cta, instr, box, entry, detail0, detail1, epoch;
};

struct KdaArgs {
    const int32_t* plan;  // Plan::serialize() on the device
    int R, L, S, nb, block_write, conv_ds, slots;
    int attn_parts;  // the plan's attn_row_parts: a slice's rows over this many CTAs (1 or 2)
    int attn_split;  // part 1's first row, attn_rows_begin(S, attn_parts, 1) (S with one part): no division in the kernel
    float eps, l2_eps, lower_bound, kscale;

    const bf16* prefix;
    const bf16* delta;
    bf16* prefix_out;
    int64_t prefix_rs, delta_rs, prefix_out_rs;  // row strides (elements)
    bf16* blocks;
    int64_t blocks_rs, blocks_bs;  // row (s) and bank-row (i) strides
    const bf16 *res_norm_w, *res_proj_w, *input_norm_w, *in_proj_w, *f_b_w, *o_norm_w;
    const float *conv_w, *A_log, *dt_bias;
    bf16* conv_state;
    int64_t conv_ss;  // slot stride (elements)
    float* ssm_state;
    int64_t ssm_ss;
    const int32_t* state_indices;
    const int32_t* num_accepted;
    bf16* core_out;
    bf16 *x, *proj, *qkv, *g1, *o;  // hand-offs; o (and g1 of one task a head) written only with export_handoffs
    int export_handoffs;

    uint64_t* tagged;  // tagged mailboxes (value | epoch << 32), plan order
    uint32_t* flags;   // flagged mailboxes (epoch), plan order
    unsigned long long* arrivals;  // CTAs that entered, over every launch: the launch's tag (launch_tag, core/plan.hpp)
    KdaErrorRecord* error;
    uint64_t poll_timeout_ns;
    int w_evict_first;  // gemv pass: the weight's copies marked evict-first in L2
    int w_pace_ns;      // gemv pass: ns between the weight steps copied before x exists (LaunchOptions::weight_pace_ns)
    uint64_t* trace;  // null, or kTraceWords clock stamps a CTA (MONOKDA_TRACE, docs/performance.md)
#if MONOKDA_STRESS
    // the stress mode's knobs (kernels/kda_stress.hpp, LaunchOptions::stress): in MONOKDA_STRESS builds only
    struct Stress {
        uint32_t release_ns, hold_ns, hold_percent, seed, plant;
    } stress;
#endif
};

}  // namespace monokda::gpu
