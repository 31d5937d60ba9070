// Properties of the state a step writes: the conv_state contents and the decay of the ssm_state.
#include <cmath>
#include <set>

#include "properties/check_util.hpp"
#include "properties/prop_list.hpp"
#include "properties/transforms.hpp"

namespace monokda::props {

using namespace detail;

// After a step the running slot of a request holds s[a .. a+W-3] (kept, raw) followed by the step's
// raw conv inputs proj[:, 0:C] (the target's own proj, SPEC §5); every slot no request runs in keeps
// its conv_state, and every slot no live request writes keeps its ssm_state. Bit-exact; no extra run.
Verdict prop_conv_state(const Target&, const StepInputs& in, const StepOutputs<float>& out, uint64_t) {
    const Config& c = in.cfg;
    Findings f("conv-state");
    std::set<int32_t> conv_written, ssm_written;
    std::vector<bf16> want(static_cast<size_t>(c.C)), got(static_cast<size_t>(c.C));
    for (int r = 0; r < c.R; ++r) {
        const int a = in.num_accepted[size_t(r)];
        const int32_t run = in.idx(r, 0);
        if (in.idx(r, a - 1) > 0)
            for (int t = 0; t < c.L; ++t)
                if (in.idx(r, t) > 0) ssm_written.insert(in.idx(r, t));
        if (run <= 0) continue;
        conv_written.insert(run);
        conv_entries_match(f, "(kept entry of request " + std::to_string(r) + ")", in, out.conv_state, run, 0, in,
                           in.conv_state, run, a, c.W - 2, true);
        for (int t = 0; t < c.L; ++t) {
            for (int ch = 0; ch < c.C; ++ch) got[size_t(ch)] = out.conv_state[size_t(in.conv_at(run, c.W - 2 + t, ch))];
            rows_match(f, "conv_state slot " + std::to_string(run) + " entry " + std::to_string(c.W - 2 + t) +
                              " against raw proj of " + at(r, t),
                       got.data(), &out.proj[row_of(c, r, t) * c.N], c.C, true);
        }
    }
    for (int s = 0; s < c.slots; ++s) {
        if (!conv_written.count(s))
            conv_entries_match(f, "(untouched)", in, out.conv_state, s, 0, in, in.conv_state, s, 0, c.conv_len(), true);
        if (!ssm_written.count(s)) ssm_slot_match(f, "(untouched)", c, out.ssm_state, s, in.ssm_state, s, true);
    }
    return f.verdict();
}

namespace {

// A variant of the step where beta = sigmoid(beta_raw) is exactly 0 and a quarter of the gate
// columns sit at each end of their range. Column 0 of every AttnRes source is set to a power of two
// 8x larger than anything else in its row, so mixed[0] > 0 and x[0] >= ~1 whatever the other
// columns hold; the beta rows of in_proj are -4096 at column 0 and 0 elsewhere, so beta_raw <= -3900
// and exp(-beta_raw) overflows to Inf in f32. dt_bias of +-1e4 drives the gate to lb or to 0.
StepInputs beta_zero_step(const StepInputs& in) {
    StepInputs v = in;
    const Config& c = v.cfg;
    const size_t D = size_t(c.D);
    for (int s = 0; s < c.S(); ++s) {
        double m = 0;
        for (size_t d = 0; d < D; ++d) {
            m = std::fmax(m, std::fabs(double(v.prefix[s * D + d].to_float())));
            m = std::fmax(m, std::fabs(double(v.delta[s * D + d].to_float())));
        }
        for (size_t d = 0; d < 8 * D; ++d) m = std::fmax(m, std::fabs(double(v.blocks[s * 8 * D + d].to_float())));
        const float big = float(std::ldexp(1.0, (m > 0 ? std::ilogb(m) + 1 : 0) + 3));
        v.prefix[s * D] = bf16::round(big);
        v.delta[s * D] = bf16{};
        for (int i = 0; i < 8; ++i) v.blocks[(size_t(s) * 8 + i) * D] = bf16::round(big);
    }
    v.input_norm_w[0] = bf16::round(1.0f);
    for (int h = 0; h < c.H; ++h) {
        bf16* w = &v.in_proj_w[size_t(c.col_beta() + h) * D];
        for (size_t d = 0; d < D; ++d) w[d] = bf16{};
        w[0] = bf16::round(-4096.0f);
    }
    for (int e = 0; e < c.E(); ++e) {
        if (e % 4 == 1) v.dt_bias[size_t(e)] = 1e4f;   // gate -> lb, decay -> e^lb
        if (e % 4 == 3) v.dt_bias[size_t(e)] = -1e4f;  // gate -> 0, decay -> 1
    }
    return v;
}

struct DecayFindings {
    std::string skip_reason;
    Findings bounds{"gate-bounds"}, pure{"beta-zero-decay"};
};

// With beta = 0 every written state is the previous one times a per-key-column decay:
// S_t[v,k] = S_{t-1}[v,k] * d_t[k]. d_t[k] is read off the largest |S_{t-1}[v,k]| of the column;
// bounds: d in [e^lb, 1] (gate in [lb, 0]), within 1e-6 relative (f32 exp and one product rounding);
// pure decay: every other v of the column agrees to 3 f32 ulps of S_{t-1} plus 2^-140 (subnormals).
DecayFindings decay_findings(const Target& tg, const StepInputs& in) {
    DecayFindings df;
    const StepInputs v = beta_zero_step(in);
    const StepOutputs<float> o = tg.run(v);
    const Config& c = v.cfg;
    for (int s = 0; s < c.S(); ++s)
        for (int h = 0; h < c.H; ++h)
            if (!(o.proj[size_t(s) * c.N + size_t(c.col_beta() + h)].to_float() <= -100.0f)) {
                df.skip_reason = "the construction did not force beta_raw <= -100 (row " + std::to_string(s) + ")";
                return df;
            }
    const double lo = std::exp(c.lower_bound) * (1 - 1e-6), hi = 1 + 1e-6;
    const double tiny = std::ldexp(1.0, -140), f32eps = std::ldexp(1.0, -24);
    int observed = 0;
    for (int r = 0; r < c.R; ++r) {
        const int a = v.num_accepted[size_t(r)];
        const int32_t init = v.idx(r, a - 1);
        if (init <= 0) continue;
        for (int t = 0; t < c.L; ++t) {
            const int32_t prev = t == 0 ? init : v.idx(r, t - 1), cur = v.idx(r, t);
            if (prev <= 0 || cur <= 0) continue;
            const std::vector<float>& P = t == 0 ? v.ssm_state : o.ssm_state;
            for (int h = 0; h < c.H; ++h)
                for (int k = 0; k < c.K; ++k) {
                    int vm = 0;
                    for (int vv = 1; vv < c.V; ++vv)
                        if (std::fabs(P[size_t(v.ssm_at(prev, h, vv, k))]) > std::fabs(P[size_t(v.ssm_at(prev, h, vm, k))])) vm = vv;
                    const double pm = P[size_t(v.ssm_at(prev, h, vm, k))];
                    if (std::fabs(pm) < 1e-30 || !std::isfinite(pm)) continue;
                    const double d = double(o.ssm_state[size_t(v.ssm_at(cur, h, vm, k))]) / pm;
                    ++observed;
                    const std::string where = at(r, t) + " head " + std::to_string(h) + " key column " + std::to_string(k);
                    if (!(d >= lo && d <= hi))
                        df.bounds.add("decay " + std::to_string(d) + " outside [e^lb, 1] = [" + std::to_string(std::exp(c.lower_bound)) +
                                      ", 1] at " + where + " (state slot " + std::to_string(prev) + " -> " + std::to_string(cur) + ")");
                    for (int vv = 0; vv < c.V; ++vv) {
                        const double p = P[size_t(v.ssm_at(prev, h, vv, k))];
                        const double got = o.ssm_state[size_t(v.ssm_at(cur, h, vv, k))];
                        if (!(std::fabs(got - p * d) <= 3 * f32eps * std::fabs(p) + tiny)) {
                            df.pure.add("state row " + std::to_string(vv) + " at " + where + " is " + hexf(float(got)) +
                                        ", not the previous state times the column's decay (" + std::to_string(p * d) + ")");
                            break;
                        }
                    }
                }
        }
    }
    if (!observed) df.skip_reason = "no request writes a state whose predecessor is known and non-zero";
    return df;
}

}  // namespace

// Gate in [lb, 0], so decay = exp(gate) in [e^lb, 1], observed through the states a beta = 0 step writes.
Verdict prop_gate_bounds(const Target& tg, const StepInputs& in, const StepOutputs<float>&, uint64_t) {
    DecayFindings df = decay_findings(tg, in);
    if (!df.skip_reason.empty()) return skip("gate-bounds", df.skip_reason);
    return df.bounds.verdict();
}

// beta = 0 is pure decay: every written state is the previous state scaled per key column.
Verdict prop_beta_zero_decay(const Target& tg, const StepInputs& in, const StepOutputs<float>&, uint64_t) {
    DecayFindings df = decay_findings(tg, in);
    if (!df.skip_reason.empty()) return skip("beta-zero-decay", df.skip_reason);
    return df.pure.verdict();
}

}  // namespace monokda::props
