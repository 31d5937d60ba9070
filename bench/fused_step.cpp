// Built when the tree has the fused kernel's library (kernels/); bench/fused_step_none.cpp otherwise.
#include "bench/fused_step.hpp"

#include "core/plan.hpp"
#include "kernels/kda_pre.hpp"

namespace monokda::bench {

namespace {

gpu::View view(const void* p, DType dt, std::vector<int64_t> shape) {
    gpu::View v;
    v.data = p;
    v.dtype = dt;
    v.strides.assign(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) v.strides[i - 1] = v.strides[i] * shape[i];
    v.shape = std::move(shape);
    return v;
}

gpu::KdaTensors tensors(const Config& c, const StepPtrs& p) {
    const int64_t S = c.S(), D = c.D, E = c.E();
    gpu::KdaTensors t;
    t.prefix = view(p.prefix, DType::BF16, {S, D});
    t.delta = view(p.delta, DType::BF16, {S, D});
    t.blocks = view(p.blocks, DType::BF16, {S, 8, D});
    t.res_norm_w = view(p.res_norm_w, DType::BF16, {D});
    t.res_proj_w = view(p.res_proj_w, DType::BF16, {D});
    t.input_norm_w = view(p.input_norm_w, DType::BF16, {D});
    t.in_proj_w = view(p.in_proj_w, DType::BF16, {c.N, D});
    t.f_b_w = view(p.f_b_w, DType::BF16, {E, c.F});
    t.conv_w = view(p.conv_w, DType::F32, {c.C, c.W});
    t.A_log = view(p.A_log, DType::F32, {c.H});
    t.dt_bias = view(p.dt_bias, DType::F32, {E});
    t.o_norm_w = view(p.o_norm_w, DType::BF16, {c.V});
    t.conv_state = view(p.conv_state, DType::BF16, c.conv_state_shape());
    t.ssm_state = view(p.ssm_state, DType::F32, {c.slots, c.H, c.V, c.K});
    t.state_indices = view(p.state_indices, DType::I32, {c.R, c.L});
    t.num_accepted = view(p.num_accepted, DType::I32, {c.R});
    t.prefix_out = view(p.prefix_out, DType::BF16, {S, D});
    t.core_out = view(p.core_out, DType::BF16, {S, E});
    t.x = view(p.x, DType::BF16, {S, D});
    t.proj = view(p.proj, DType::BF16, {S, c.N});
    t.qkv = view(p.qkv, DType::BF16, {S, c.C});
    t.g1 = view(p.g1, DType::BF16, {S, E});
    t.o = view(p.o, DType::BF16, {S, E});
    return t;
}

class KdaFusedStep final : public FusedStep {
public:
    explicit KdaFusedStep(const FusedChoices& choices) : choices_(choices) {}
    void prepare(const Config& step, const std::vector<StepPtrs>& sets, FusedVariant variant) override {
        gpu::check_supported(step);
        Plan plan = gpu::device_plan(step, choices_.gemv_bands, choices_.attn_parts, choices_.placement);  // one CTA a multiprocessor, as the launcher requires
        gpu::LaunchOptions opt;  // the production launch: matrix-unit in_proj, no hand-off export
        opt.weight_evict_first = choices_.weight_evict_first;
        opt.weight_pace_ns = choices_.weight_pace_ns;
        if (variant != FusedVariant::full) {
            // drop the later roles' instructions; the mailboxes they would fill then have no
            // producer, which the launcher's plan check rightly calls a problem: skip that check
            for (int cta = 0; cta < plan.blocks(); ++cta)
                for (int i = int(plan.instrs(cta).size()); i-- > 0;) {
                    const Role role = role_of(plan.instrs(cta)[size_t(i)].opcode());
                    if (role == Role::kda || (variant == FusedVariant::attn && role == Role::gemv)) plan.erase_instr(cta, i);
                }
            opt.check_plan = false;
        }
        launcher_ = std::make_unique<gpu::KdaLauncher>(plan, opt);
        tensors_.clear();
        for (const auto& p : sets) tensors_.push_back(tensors(step, p));
    }
    void enqueue(int set, void* stream) override { launcher_->launch(tensors_[size_t(set)], stream); }
    void check(void* stream) override { launcher_->check(stream); }

private:
    FusedChoices choices_;
    std::unique_ptr<gpu::KdaLauncher> launcher_;
    std::vector<gpu::KdaTensors> tensors_;
};

}  // namespace

std::unique_ptr<FusedStep> make_fused_step(const FusedChoices& choices, std::string& why) {
    const gpu::DeviceInfo info = gpu::probe();  // built: this file is compiled only with a GPU backend
    if (!info.present) {
        why = "not measured: " + info.why;
        return nullptr;
    }
    return std::make_unique<KdaFusedStep>(choices);
}

}  // namespace monokda::bench
