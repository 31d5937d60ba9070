// Kernel v2's tail on the host, a task's part at a time (docs/kernel-v2.md "The tail"; SPEC §3 C-F):
// the owner's conv of one channel, a g1 element and its decay, a token's l2 norms, a token of the
// recurrence on a task's state rows, and the gated norm's partial and output. Each is the step as a
// task computes it, in the plan's reduction order (PlanV2::reduction_order), f32, with the roundings
// #4-#7 where SPEC §3 puts them: the emulator's tail runs them on what has landed in its CTA
// (emulator/v2/tail_v2.cpp), and the reference, which computes whole tensors its own way, must agree
// with them bit for bit in the same order (tests/core/test_tail_stages.cpp).
#pragma once
#include <cmath>
#include <vector>

#include "core/bf16.hpp"
#include "core/exp_once.hpp"
#include "core/reduction_order.hpp"
#include "core/step.hpp"

namespace monokda {

// D, channel ch of request r: the window (W − 1 state entries from offset a − 1, zeros without a
// running slot, then the step's raw inputs x[0 .. L−1]), out[t] = SiLU(acc_t) rounded (#5); where the
// request has a running slot, its new entries (W − 2 kept, then the raw inputs) into conv_state.
void tail_conv(const StepInputs& in, int r, int ch, const bf16* x, bf16* out, std::vector<bf16>& conv_state);
// C, one element of g1: bf16(Σ_f fa[f] · w[f]) over F terms in f_b's order (#4).
bf16 tail_g1(const ReductionOrder& ord, const float* fa, const bf16* w, int F);
// E, key k's decay from its g1: exp(lb · sigmoid(A · (g1 + dt_bias))), A = exp(A_log[h]).
float tail_decay(float A, bf16 g1, float dt_bias, float lb);
// E, one token's q̂ and k̂ of K keys: x / sqrt(Σx² + l2_eps), q̂ also · K^−½ (l2_q and l2_k's order).
void tail_l2(const ReductionOrder& ord, const bf16* q, const bf16* k, int K, float l2_eps, float* qn, float* kn);
// E, one token on n state rows St [n][K]: decay each key column, u = (v − Σ_k S·k̂) · beta, S += u·k̂,
// o = Σ_k S·q̂ rounded (#6), each sum in rec_kS's and rec_oq's order.
void tail_rec_token(const ReductionOrder& ord, float* St, int n, int K, const float* decay, const float* kn, const float* qn,
                    const bf16* v, float beta, bf16* o);
// F, a task's partial Σō² of its n rows, sequential (onorm_sumsq's split order: the tasks' partials
// then added in tile order), and one output: bf16(((ō · rr) · w) · sigmoid(g2)) (#7).
float tail_sumsq(const bf16* o, int n);
// F, 1/rms of a row from its Σō² over V values
inline float tail_rr(float ms, int V, float eps) { return 1.f / std::sqrt(ms / float(V) + eps); }
bf16 tail_out(bf16 o, float rr, bf16 w, bf16 g2);
}  // namespace monokda
