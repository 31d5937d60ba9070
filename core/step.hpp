// The tensors of one step (SPEC §2): typed, validated views of a fixture, and the outputs.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "core/config.hpp"
#include "core/safetensors.hpp"

namespace monokda {

struct StepInputs {
    Config cfg;
    std::vector<bf16> prefix, delta;          // [S, D]
    std::vector<bf16> blocks;                 // [S, 8, D]
    std::vector<bf16> res_norm_w, res_proj_w, input_norm_w;  // [D]
    std::vector<bf16> in_proj_w;              // [N, D]
    std::vector<bf16> f_b_w;                  // [E, F]
    std::vector<float> conv_w;                // [C, W]
    std::vector<float> A_log;                 // [H]
    std::vector<float> dt_bias;               // [E]
    std::vector<bf16> o_norm_w;               // [V]
    std::vector<bf16> conv_state;             // [slots, W-2+L, C] (sd) or [slots, C, W-2+L] (ds)
    std::vector<float> ssm_state;             // [slots, H, V, K]
    std::vector<int32_t> state_indices;       // [R, L]
    std::vector<int32_t> num_accepted;        // [R]

    // element offset of conv_state entry j (0..W-2+L-1) of channel c in slot
    int64_t conv_at(int64_t slot, int j, int c) const {
        const int64_t len = cfg.conv_len();
        return cfg.conv_layout == ConvLayout::sd ? (slot * len + j) * cfg.C + c : (slot * cfg.C + c) * len + j;
    }
    int64_t ssm_at(int64_t slot, int h, int v, int k) const {
        return ((slot * cfg.H + h) * int64_t(cfg.V) + v) * cfg.K + k;
    }
    int32_t idx(int r, int t) const { return state_indices[size_t(r) * cfg.L + t]; }

    // Reads a fixture; checks config, every tensor's dtype and shape, slot range, duplicate slots and
    // num_accepted. BadInput names the first problem.
    static StepInputs from_file(const TensorFile& f);
    TensorFile to_file() const;
    void validate_step() const;  // slots and num_accepted; called by from_file and by generators
    // The same step with conv_state held in `layout`: every entry moved, nothing else changed.
    StepInputs with_conv_layout(ConvLayout layout) const;
    // Same config and every tensor equal, bit for bit (no file is built).
    bool operator==(const StepInputs& o) const;
};

// Bit equality of two vectors (bf16 and floats: +0/-0 and NaN payloads count).
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The input tensors of SPEC §2 for config c, in file order: f(name, dtype, shape, member), member a
// pointer to the StepInputs field. The one table behind reading, writing and comparing a step.
template <class F>
void for_each_input(const Config& c, F&& f) {
    const int64_t S = c.S(), D = c.D, E = c.E();
    f("prefix", DType::BF16, std::vector<int64_t>{S, D}, &StepInputs::prefix);
    f("delta", DType::BF16, std::vector<int64_t>{S, D}, &StepInputs::delta);
    f("blocks", DType::BF16, std::vector<int64_t>{S, 8, D}, &StepInputs::blocks);
    f("res_norm_w", DType::BF16, std::vector<int64_t>{D}, &StepInputs::res_norm_w);
    f("res_proj_w", DType::BF16, std::vector<int64_t>{D}, &StepInputs::res_proj_w);
    f("input_norm_w", DType::BF16, std::vector<int64_t>{D}, &StepInputs::input_norm_w);
    f("in_proj_w", DType::BF16, std::vector<int64_t>{c.N, D}, &StepInputs::in_proj_w);
    f("f_b_w", DType::BF16, std::vector<int64_t>{E, c.F}, &StepInputs::f_b_w);
    f("conv_w", DType::F32, std::vector<int64_t>{c.C, c.W}, &StepInputs::conv_w);
    f("A_log", DType::F32, std::vector<int64_t>{c.H}, &StepInputs::A_log);
    f("dt_bias", DType::F32, std::vector<int64_t>{E}, &StepInputs::dt_bias);
    f("o_norm_w", DType::BF16, std::vector<int64_t>{c.V}, &StepInputs::o_norm_w);
    f("conv_state", DType::BF16, c.conv_state_shape(), &StepInputs::conv_state);
    f("ssm_state", DType::F32, std::vector<int64_t>{c.slots, c.H, c.V, c.K}, &StepInputs::ssm_state);
    f("state_indices", DType::I32, std::vector<int64_t>{c.R, c.L}, &StepInputs::state_indices);
    f("num_accepted", DType::I32, std::vector<int64_t>{c.R}, &StepInputs::num_accepted);
}

// Tensor `name` of f, checked: BadInput naming it when it is missing or its dtype or shape is not
// the one given. I64 is accepted where I32 is asked for (index tensors as PyTorch writes them),
// each value range-checked. The one check behind reading fixtures and candidate outputs.
template <class T>
std::vector<T> take_tensor(const TensorFile& f, const std::string& name, DType dt, const std::vector<int64_t>& shape);

// Outputs and intermediates (SPEC §2). T is the recurrence's state type: float, or double for the oracle.
template <class T>
struct StepOutputs {
    std::vector<bf16> prefix_out;  // [S, D]
    std::vector<bf16> blocks;      // [S, 8, D] (row nb written on block-write layers)
    std::vector<bf16> core_out;    // [S, E]
    std::vector<bf16> conv_state;  // as input
    std::vector<T> ssm_state;      // as input
    std::vector<bf16> x, proj, g1, qkv, o;  // [S,D] [S,N] [S,E] [S,C] [S,E]

    // Writes every output and intermediate under its SPEC name, plus the inputs' metadata.
    TensorFile to_file(const Config& cfg) const;
};

// The outputs and intermediates of a step (SPEC §2), the one list of them, in pipeline order (the
// order in which a first difference is looked for): f(name, dtype, shape, member of StepOutputs<T>).
template <class T, class F>
void for_each_output(const Config& c, F&& f) {
    using O = StepOutputs<T>;
    const int64_t S = c.S(), D = c.D, E = c.E();
    f("prefix_out", DType::BF16, std::vector<int64_t>{S, D}, &O::prefix_out);
    f("blocks", DType::BF16, std::vector<int64_t>{S, 8, D}, &O::blocks);
    f("x", DType::BF16, std::vector<int64_t>{S, D}, &O::x);
    f("proj", DType::BF16, std::vector<int64_t>{S, c.N}, &O::proj);
    f("g1", DType::BF16, std::vector<int64_t>{S, E}, &O::g1);
    f("qkv", DType::BF16, std::vector<int64_t>{S, c.C}, &O::qkv);
    f("conv_state", DType::BF16, c.conv_state_shape(), &O::conv_state);
    f("o", DType::BF16, std::vector<int64_t>{S, E}, &O::o);
    f("ssm_state", sizeof(T) == 8 ? DType::F64 : DType::F32, std::vector<int64_t>{c.slots, c.H, c.V, c.K}, &O::ssm_state);
    f("core_out", DType::BF16, std::vector<int64_t>{S, E}, &O::core_out);
}
constexpr int kOutputCount = 10;
// for_each_output's names, in its order.
const std::vector<std::string>& output_names();

}  // namespace monokda
