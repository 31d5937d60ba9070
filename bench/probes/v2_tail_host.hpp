// The host half of kernel v2's tail probe (bench/probes/v2_tail_probe.cu): a verify step at the
// production shape from the project's generator, the plan with the tail (PlanV2Params::tail, x an
// input), and what the reference computes in that plan's order, the probe's inputs (proj among them:
// the tail starts where in_proj ends) and the tail's outputs it must reproduce bit for bit. Built by
// the host compiler (v2_tail_host.cpp), so the probe's CUDA half sees plain vectors.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan_v2.hpp"

namespace monokda::probe::v2 {

struct TailFixture {
    int R = 0, L = 0, S = 0, slots = 0, conv_len = 0;
    monokda::V2TailDims dims{};  // what the tail's memory is laid out for (PlanV2::tail_dims)
    uint64_t seed = 0;
    bool conv_ds = false;
    float eps = 0.f, l2_eps = 0.f, lower_bound = 0.f, k_scale = 0.f;  // k_scale: K^−½ as the reference takes it
    std::vector<int32_t> words;  // the plan's flat table
    std::string order;           // the plan's reduction order, as the reference names it
    // the step's inputs the tail reads, and proj from the reference (bf16 as bits)
    std::vector<uint16_t> proj, conv_state, f_b_w, o_norm_w;
    std::vector<float> conv_w, A_log, dt_bias, ssm_state;
    std::vector<int32_t> state_indices, num_accepted;
    // what the tail must write: the reference's, in the plan's order
    std::vector<uint16_t> qkv, conv_out, g1, o, core_out;
    std::vector<float> ssm_out;
    // The step's decays (every request, token, head, key) and how many of them glibc's expf makes
    // other than exp in double rounded once, which the reference and the kernel take (exp_once): each
    // would move its key's state column of its head in a reference on expf (decision 0023).
    long decays = 0, decays_expf_differ = 0;
};

// R × L at the production shape, step metadata as the generator draws it (seed). Exits 1, naming
// it, where the plan is not one the probe's kernel runs (its shape, its tasks' pairs, its waits).
// Runs on the host alone (the probe's `host` mode prints what it finds without a GPU).
TailFixture tail_fixture(int R, int L, uint64_t seed);

// The tail's outputs again (qkv, conv_out, g1, o, core_out, ssm_out), from `proj` ([S][N] bf16 bits:
// an in_proj kernel's own) in place of the reference's: what the tail must make of the proj it was
// handed, bit for bit (teacher forcing, SPEC §5), in the plan's order.
void tail_expect(TailFixture& f, const std::vector<uint16_t>& proj);

}  // namespace monokda::probe::v2
