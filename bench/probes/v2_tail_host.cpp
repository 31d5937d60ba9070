// The v2 tail probe's fixture (v2_tail_host.hpp): core's generator, kernel v2's plan with the tail and
// x an input, the reference in the plan's order; the plan held to what the probe's kernel reads.
#include "bench/probes/v2_tail_host.hpp"

#include "bench/probes/v2_seam_host.hpp"  // bits

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/fixture_gen.hpp"
#include "core/plan_v2.hpp"
#include "reference/reference.hpp"

namespace monokda::probe::v2 {

namespace {

[[noreturn]] void refuse(int R, int L, const std::string& what) {
    std::fprintf(stderr, "monokda-v2-tail-probe: the plan for R %d, L %d: %s\n", R, L, what.c_str());
    std::exit(1);
}

// What the kernel takes from the plan as it stands, and what it takes for granted: a pair is the T
// tasks around one (tasks by request, head, tile), a share's rows are whole bf16 pairs (4-byte
// st.async), a task's REC right after its POLL, and each step's waits of the kinds its code waits on.
void hold_to_kernel(const PlanV2& p) {
    const Config& c = p.config();
    auto need = [&](bool ok, const std::string& what) {
        if (!ok) refuse(c.R, c.L, what);
    };
    const auto probs = p.problems();
    need(probs.empty(), probs.empty() ? "" : "its check " + probs[0].check + " fails: " + probs[0].what);
    need(p.has_tail() && !p.has_seam() && p.ctas() == 120 && p.params().ranks == 8, "not the tail on 15 clusters of 8 without the seam");
    need(c.L <= 8 && c.K == 128 && c.V == 128 && c.F == 128 && p.tail_tiles() == 8, "not the shape the kernel is compiled for");
    const int T = p.tail_tiles();
    for (size_t i = 0; i < p.tasks.size(); ++i) {
        const V2Task& t = p.tasks[i];
        const std::vector<int> pair = p.tail_pair(int(i));
        bool around = int(pair.size()) == T;
        for (int m = 0; around && m < T; ++m) around = pair[size_t(m)] == int(i) - t.tile + m;
        need(around, "task " + std::to_string(i) + "'s pair is not the " + std::to_string(T) + " tasks around it");
        need(t.qk0 % 2 == 0 && t.qkn % 2 == 0 && t.fa0 % 2 == 0 && t.fan % 2 == 0, "task " + std::to_string(i) + "'s share is not whole bf16 pairs");
    }
    for (int k = 0; k < p.ctas(); ++k)
        for (V2Role role : {V2Role::reducer, V2Role::seam}) {
            const int q = PlanV2::proc(k, role);
            for (int i = 0; i < int(p.programs[size_t(q)].size()); ++i) {
                const V2Op op = p.programs[size_t(q)][size_t(i)].opcode();
                const std::vector<V2Wait> w = p.waits(q, i);
                const bool reducer = op == V2Op::SYNC || op == V2Op::REDUCE || op == V2Op::PUBLISH || op == V2Op::RELEASE;
                const bool seam = op == V2Op::SYNC || op == V2Op::POLL || op == V2Op::REC || op == V2Op::NORM;
                need(role == V2Role::reducer ? reducer : seam, p.proc_name(q) + " has " + p.describe(p.programs[size_t(q)][size_t(i)]) +
                                                                   ", which the probe does not run");
                if (op == V2Op::POLL) {  // POLL stages the head's f_b_w block for the REC that follows it
                    const auto& prog = p.programs[size_t(q)];
                    need(i + 1 < int(prog.size()) && prog[size_t(i) + 1].opcode() == V2Op::REC && prog[size_t(i) + 1].a == prog[size_t(i)].a,
                         p.proc_name(q) + "'s " + p.describe(prog[size_t(i)]) + " is not followed by its task's REC");
                }
                if (op != V2Op::POLL && op != V2Op::NORM && op != V2Op::REC) continue;
                size_t words = 0;
                for (const V2Wait& x : w) words += x.bar.kind == V2Bar::words;
                const bool ok = op == V2Op::REC    ? w.size() == 1 && w[0].bar.kind == V2Bar::share
                                : op == V2Op::POLL ? words == w.size() && words <= 32
                                                   : words + 1 == w.size() && words <= 32 && w.back().bar.kind == V2Bar::onrm;
                need(ok, p.proc_name(q) + "'s " + p.describe(p.programs[size_t(q)][size_t(i)]) + " waits on what the probe does not");
            }
        }
}

}  // namespace

TailFixture tail_fixture(int R, int L, uint64_t seed) {
    Config cfg = Config::preset("k3");
    cfg.R = R, cfg.L = L, cfg.seed = seed;
    const StepInputs in = make_fixture(cfg);
    cfg = in.cfg;  // slots as the generator set them
    PlanV2Params pp = PlanV2Params::for_config(cfg);
    pp.seam = 0, pp.tail = 1;
    const PlanV2 plan = PlanV2::build(cfg, pp);
    hold_to_kernel(plan);
    const ReductionOrder ord = plan.reduction_order();
    const StepOutputs<float> ref = ref::run<float>(in, ord);
    TailFixture f;
    f.R = R, f.L = L, f.S = cfg.S(), f.slots = cfg.slots, f.conv_len = cfg.conv_len();
    f.conv_ds = cfg.conv_layout == ConvLayout::ds;
    f.eps = float(cfg.eps), f.l2_eps = float(cfg.l2_eps), f.lower_bound = float(cfg.lower_bound);
    f.k_scale = float(std::pow(double(cfg.K), -0.5));
    for (const V2Task& t : plan.tasks) f.pairs = std::max(f.pairs, t.onrm + 1);
    f.words = plan.serialize();
    f.order = ord.str();
    f.proj = bits(ref.proj), f.conv_state = bits(in.conv_state), f.f_b_w = bits(in.f_b_w), f.o_norm_w = bits(in.o_norm_w);
    f.conv_w = in.conv_w, f.A_log = in.A_log, f.dt_bias = in.dt_bias, f.ssm_state = in.ssm_state;
    f.state_indices = in.state_indices, f.num_accepted = in.num_accepted;
    f.qkv = bits(ref.qkv), f.conv_out = bits(ref.conv_state), f.g1 = bits(ref.g1), f.o = bits(ref.o), f.core_out = bits(ref.core_out);
    f.ssm_out = ref.ssm_state;
    return f;
}

}  // namespace monokda::probe::v2
