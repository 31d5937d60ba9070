// The original path of SPEC §3, steps A–F, as one template over the arithmetic type T:
// T = float is the reference, T = double the oracle (bf16 roundings kept at the same hand-offs).
// Each stage is callable on its own so that an implementation's exported hand-offs can be fed in
// (teacher forcing, SPEC §5).
#pragma once
#include <vector>

#include "core/step.hpp"
#include "core/reduction_order.hpp"

namespace monokda::ref {

// A: prefix_out (#1), blocks (row nb on block-write layers), x (#2).
template <class T>
void attnres(const StepInputs& in, const ReductionOrder& ord, std::vector<bf16>& prefix_out,
             std::vector<bf16>& blocks, std::vector<bf16>& x);
// B: proj = x · in_proj_wᵀ (#3), [S, N].
template <class T>
std::vector<bf16> in_proj(const StepInputs& in, const ReductionOrder& ord, const std::vector<bf16>& x);
// C: g1 = f_a · f_b_wᵀ (#4), [S, E].
template <class T>
std::vector<bf16> f_b(const StepInputs& in, const ReductionOrder& ord, const std::vector<bf16>& proj);
// D: spec-mode short conv: qkv (#5) and the written conv_state.
template <class T>
void short_conv(const StepInputs& in, const std::vector<bf16>& proj, std::vector<bf16>& qkv,
                std::vector<bf16>& conv_state);
// E: recurrence: o (#6) and the per-token ssm_state writes (state in T).
template <class T>
void recurrence(const StepInputs& in, const ReductionOrder& ord, const std::vector<bf16>& qkv,
                const std::vector<bf16>& proj, const std::vector<bf16>& g1, std::vector<bf16>& o,
                std::vector<T>& ssm_state);
// F: gated output RMSNorm: core_out (#7).
template <class T>
std::vector<bf16> out_norm(const StepInputs& in, const ReductionOrder& ord, const std::vector<bf16>& o,
                           const std::vector<bf16>& proj);

// A..F chained.
template <class T>
StepOutputs<T> run(const StepInputs& in, const ReductionOrder& ord = {});

// A..F each on its own, B..F fed an implementation's exported hand-offs (teacher forcing, SPEC §5):
// each field is what its stage makes of `handoffs`' inputs to that stage, to hold against the
// implementation's own output of the stage. A reads the fixture only.
template <class T>
StepOutputs<T> teacher_forced(const StepInputs& in, const ReductionOrder& ord, const StepOutputs<float>& handoffs);

}  // namespace monokda::ref
