#include "core/step.hpp"

#include <unordered_set>

#include "core/error.hpp"

namespace monokda {

const char* const kOutputNames[10] = {"prefix_out", "blocks", "conv_state", "ssm_state", "x",
                                      "proj",       "g1",     "qkv",        "o",         "core_out"};

namespace {

template <class T>
std::vector<T> take(const TensorFile& f, const std::string& name, DType dt, std::vector<int64_t> shape) {
    const Tensor& t = f.get(name);
    if (t.dtype != dt)
        bad_input("tensor '" + name + "' has dtype " + to_string(t.dtype) + ", expected " + to_string(dt));
    if (t.shape != shape)
        bad_input("tensor '" + name + "' has shape " + t.shape_str() + ", expected " + shape_str(shape));
    return t.as<T>();
}

}  // namespace

void StepInputs::validate_step() const {
    const Config& c = cfg;
    std::unordered_set<int32_t> seen;
    for (int r = 0; r < c.R; ++r) {
        for (int t = 0; t < c.L; ++t) {
            int32_t s = idx(r, t);
            if (s <= 0) continue;
            if (s >= c.slots)
                bad_input("state_indices[" + std::to_string(r) + "][" + std::to_string(t) + "] = " +
                          std::to_string(s) + " is out of range (slots = " + std::to_string(c.slots) + ")");
            if (!seen.insert(s).second)
                bad_input("state_indices: slot " + std::to_string(s) + " appears more than once (at [" +
                          std::to_string(r) + "][" + std::to_string(t) + "])");
        }
        int32_t a = num_accepted[size_t(r)];
        if (a < 1 || a > c.L)
            bad_input("num_accepted[" + std::to_string(r) + "] = " + std::to_string(a) + " is outside 1..L = 1.." +
                      std::to_string(c.L));
    }
}

StepInputs StepInputs::from_file(const TensorFile& f) {
    StepInputs in;
    in.cfg = Config::from_metadata(f.metadata);
    const Config& c = in.cfg;
    const int64_t S = c.S(), D = c.D, E = c.E();
    in.prefix = take<bf16>(f, "prefix", DType::BF16, {S, D});
    in.delta = take<bf16>(f, "delta", DType::BF16, {S, D});
    in.blocks = take<bf16>(f, "blocks", DType::BF16, {S, 8, D});
    in.res_norm_w = take<bf16>(f, "res_norm_w", DType::BF16, {D});
    in.res_proj_w = take<bf16>(f, "res_proj_w", DType::BF16, {D});
    in.input_norm_w = take<bf16>(f, "input_norm_w", DType::BF16, {D});
    in.in_proj_w = take<bf16>(f, "in_proj_w", DType::BF16, {c.N, D});
    in.f_b_w = take<bf16>(f, "f_b_w", DType::BF16, {E, c.F});
    in.conv_w = take<float>(f, "conv_w", DType::F32, {c.C, c.W});
    in.A_log = take<float>(f, "A_log", DType::F32, {c.H});
    in.dt_bias = take<float>(f, "dt_bias", DType::F32, {E});
    in.o_norm_w = take<bf16>(f, "o_norm_w", DType::BF16, {c.V});
    in.conv_state = take<bf16>(f, "conv_state", DType::BF16, c.conv_state_shape());
    in.ssm_state = take<float>(f, "ssm_state", DType::F32, {c.slots, c.H, c.V, c.K});
    in.state_indices = take<int32_t>(f, "state_indices", DType::I32, {c.R, c.L});
    in.num_accepted = take<int32_t>(f, "num_accepted", DType::I32, {c.R});
    in.validate_step();
    return in;
}

TensorFile StepInputs::to_file() const {
    const Config& c = cfg;
    const int64_t S = c.S(), D = c.D, E = c.E();
    TensorFile f;
    f.metadata = c.to_metadata();
    auto& t = f.tensors;
    t["prefix"] = Tensor::of(DType::BF16, {S, D}, prefix);
    t["delta"] = Tensor::of(DType::BF16, {S, D}, delta);
    t["blocks"] = Tensor::of(DType::BF16, {S, 8, D}, blocks);
    t["res_norm_w"] = Tensor::of(DType::BF16, {D}, res_norm_w);
    t["res_proj_w"] = Tensor::of(DType::BF16, {D}, res_proj_w);
    t["input_norm_w"] = Tensor::of(DType::BF16, {D}, input_norm_w);
    t["in_proj_w"] = Tensor::of(DType::BF16, {c.N, D}, in_proj_w);
    t["f_b_w"] = Tensor::of(DType::BF16, {E, c.F}, f_b_w);
    t["conv_w"] = Tensor::of(DType::F32, {c.C, c.W}, conv_w);
    t["A_log"] = Tensor::of(DType::F32, {c.H}, A_log);
    t["dt_bias"] = Tensor::of(DType::F32, {E}, dt_bias);
    t["o_norm_w"] = Tensor::of(DType::BF16, {c.V}, o_norm_w);
    t["conv_state"] = Tensor::of(DType::BF16, c.conv_state_shape(), conv_state);
    t["ssm_state"] = Tensor::of(DType::F32, {c.slots, c.H, c.V, c.K}, ssm_state);
    t["state_indices"] = Tensor::of(DType::I32, {c.R, c.L}, state_indices);
    t["num_accepted"] = Tensor::of(DType::I32, {c.R}, num_accepted);
    return f;
}

template <class T>
TensorFile StepOutputs<T>::to_file(const Config& c) const {
    const int64_t S = c.S(), D = c.D, E = c.E();
    TensorFile f;
    f.metadata = c.to_metadata();
    auto& t = f.tensors;
    t["prefix_out"] = Tensor::of(DType::BF16, {S, D}, prefix_out);
    t["blocks"] = Tensor::of(DType::BF16, {S, 8, D}, blocks);
    t["core_out"] = Tensor::of(DType::BF16, {S, E}, core_out);
    t["conv_state"] = Tensor::of(DType::BF16, c.conv_state_shape(), conv_state);
    t["ssm_state"] = Tensor::of(sizeof(T) == 8 ? DType::F64 : DType::F32, {c.slots, c.H, c.V, c.K}, ssm_state);
    t["x"] = Tensor::of(DType::BF16, {S, D}, x);
    t["proj"] = Tensor::of(DType::BF16, {S, c.N}, proj);
    t["g1"] = Tensor::of(DType::BF16, {S, E}, g1);
    t["qkv"] = Tensor::of(DType::BF16, {S, c.C}, qkv);
    t["o"] = Tensor::of(DType::BF16, {S, E}, o);
    return f;
}

template struct StepOutputs<float>;
template struct StepOutputs<double>;

}  // namespace monokda
