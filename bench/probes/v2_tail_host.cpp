// The v2 tail probe's fixture (v2_tail_host.hpp): core's generator, kernel v2's plan with the tail and
// x an input, the reference in the plan's order; the plan held to what the probe's kernel reads.
#include "bench/probes/v2_tail_host.hpp"

#include "bench/probes/v2_seam_host.hpp"  // bits
#include "bench/probes/v2_tail_plan.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/fixture_gen.hpp"
#include "core/plan_v2.hpp"
#include "core/tail_stages.hpp"
#include "reference/reference.hpp"

namespace monokda::probe::v2 {

TailFixture tail_fixture(int R, int L, uint64_t seed) {
    Config cfg = Config::preset("k3");
    cfg.R = R, cfg.L = L, cfg.seed = seed;
    const StepInputs in = make_fixture(cfg);
    cfg = in.cfg;  // slots as the generator set them
    PlanV2Params pp = PlanV2Params::for_config(cfg);
    pp.seam = 0, pp.tail = 1;
    const PlanV2 plan = PlanV2::build(cfg, pp);
    const std::vector<std::string> problems = tail_kernel_problems(plan);
    for (const std::string& what : problems) std::fprintf(stderr, "monokda-v2-tail-probe: the plan for R %d, L %d: %s\n", R, L, what.c_str());
    if (!problems.empty()) std::exit(1);
    const ReductionOrder ord = plan.reduction_order();
    const StepOutputs<float> ref = ref::run<float>(in, ord);
    TailFixture f;
    f.seed = seed;
    f.R = R, f.L = L, f.S = cfg.S(), f.slots = cfg.slots, f.conv_len = cfg.conv_len();
    f.conv_ds = cfg.conv_layout == ConvLayout::ds;
    f.eps = float(cfg.eps), f.l2_eps = float(cfg.l2_eps), f.lower_bound = float(cfg.lower_bound);
    f.k_scale = float(std::pow(double(cfg.K), -0.5));
    f.dims = plan.tail_dims();
    f.words = plan.serialize();
    f.order = ord.str();
    f.proj = bits(ref.proj), f.conv_state = bits(in.conv_state), f.f_b_w = bits(in.f_b_w), f.o_norm_w = bits(in.o_norm_w);
    f.conv_w = in.conv_w, f.A_log = in.A_log, f.dt_bias = in.dt_bias, f.ssm_state = in.ssm_state;
    f.state_indices = in.state_indices, f.num_accepted = in.num_accepted;
    f.qkv = bits(ref.qkv), f.conv_out = bits(ref.conv_state), f.g1 = bits(ref.g1), f.o = bits(ref.o), f.core_out = bits(ref.core_out);
    f.ssm_out = ref.ssm_state;
    for (int h = 0; h < cfg.H; ++h) {  // the reference's decays (exp_once) against glibc's expf's
        const float A_expf = std::exp(in.A_log[size_t(h)]), A = exp_once(in.A_log[size_t(h)]);
        for (int s = 0; s < cfg.S(); ++s)
            for (int k = 0; k < cfg.K; ++k) {
                const int e = h * cfg.K + k;
                const bf16 g1 = ref.g1[size_t(s) * size_t(cfg.E()) + size_t(e)];
                const float z = A_expf * (g1.to_float() + in.dt_bias[size_t(e)]);
                const float expf_decay = std::exp(f.lower_bound * (1.f / (1.f + std::exp(-z))));
                f.decays_expf_differ += tail_decay(A, g1, in.dt_bias[size_t(e)], f.lower_bound) != expf_decay;
                ++f.decays;
            }
    }
    return f;
}

void tail_expect(TailFixture& f, const std::vector<uint16_t>& proj) {
    Config cfg = Config::preset("k3");
    cfg.R = f.R, cfg.L = f.L, cfg.seed = f.seed;
    const StepInputs in = make_fixture(cfg);             // the fixture's inputs again, from its seed
    const ReductionOrder ord = ReductionOrder::parse(f.order);  // its plan's order, not its plan rebuilt
    std::vector<bf16> p(proj.size()), qkv, conv_state;
    for (size_t i = 0; i < proj.size(); ++i) p[i] = bf16::from_bits(proj[i]);
    const std::vector<bf16> g1 = ref::f_b<float>(in, ord, p);
    ref::short_conv<float>(in, p, qkv, conv_state);
    std::vector<bf16> o;
    std::vector<float> ssm;  // from the step's states (recurrence)
    ref::recurrence<float>(in, ord, qkv, p, g1, o, ssm);
    f.qkv = bits(qkv), f.conv_out = bits(conv_state), f.g1 = bits(g1), f.o = bits(o), f.ssm_out = ssm;
    f.core_out = bits(ref::out_norm<float>(in, ord, o, p));
}

}  // namespace monokda::probe::v2
