// SPEC §5's free-running check: each exported order-sensitive output's distance from the f64 oracle
// against the reduction-order envelope; the envelope measured for a fixture, and widened for an
// in_proj through tensor cores by runs whose in_proj is a tensor-core GEMM's (a model of one).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/compare.hpp"
#include "reference/reference.hpp"
#include "verify/check_draft.hpp"

namespace monokda::verify {

using namespace detail;

std::vector<Check> envelope_checks(const StepInputs& in, const Candidate& cand, const emu::Envelope& env,
                                   const TensorFile& oracle) {
    const Config& c = in.cfg;
    std::vector<TensorDiff> dist;
    for (const emu::EnvelopeBound& b : env.outputs) {
        TensorDiff d;
        d.name = b.name;
        d.frac_identical = 1;
        if (cand.has(b.name)) {
            d = diff_tensors(b.name, tensor_of(c, cand.out, b.name), oracle.get(b.name));
        }
        dist.push_back(d);
    }
    const std::vector<emu::EnvelopeCheck> judged = emu::check_distances(env, dist);
    std::vector<Check> out;
    for (size_t k = 0; k < judged.size(); ++k) {
        const emu::EnvelopeCheck& j = judged[k];
        const emu::EnvelopeBound& b = env.outputs[k];
        Draft d(c, "envelope." + j.name, "envelope", j.name);
        if (!cand.has(j.name)) {
            out.push_back(d.not_checked("not exported"));
            continue;
        }
        const TensorDiff& td = j.diff;
        Check& ck = d.ck;
        ck.elements = td.numel;
        ck.differing = td.differing;
        ck.status = j.inside ? Status::passed : Status::failed;
        if (td.first_differing >= 0) {
            const Tensor& want = oracle.get(j.name);
            const size_t i = size_t(td.first_differing);
            if (j.name == "ssm_state") {
                const double w = want.dtype == DType::F64 ? want.as<double>()[i] : double(want.as<float>()[i]);
                d.first(td.first_differing, cand.out.ssm_state[i], w);
            } else {
                d.first(td.first_differing, bf16_tensor(cand.out, j.name)[i], want.as<bf16>()[i]);
            }
        }
        const emu::EnvelopeLimits l = emu::envelope_limits(env, b, td.numel);
        if (l.state) {
            ck.summary = "against the f64 oracle: rel-L2 " + fmt("%.3g", td.rel_l2) + " (bound " + fmt("%.3g", l.max_rel_l2) +
                         "), max abs " + fmt("%.3g", td.max_abs) + " (bound " + fmt("%.3g", l.max_abs) + ")";
            ck.numbers = {{"rel_l2", td.rel_l2},   {"rel_l2_bound", l.max_rel_l2}, {"max_abs", td.max_abs},
                          {"max_abs_bound", l.max_abs}, {"frac_identical", td.frac_identical},
                          {"elements", double(td.numel)}, {"differing", double(td.differing)}};
        } else {
            ck.summary = "against the f64 oracle: " + pct(td.frac_identical) + " identical (floor " + pct(l.min_frac_identical) +
                         "), " + fmt("%.3g", td.max_row_ulp) + " ulp at row scale (bound " + fmt("%.3g", l.max_row_ulp) +
                         "), rel-L2 " + fmt("%.3g", td.rel_l2);
            ck.numbers = {{"frac_identical", td.frac_identical}, {"min_frac_identical", l.min_frac_identical},
                          {"max_row_ulp", td.max_row_ulp},       {"max_row_ulp_bound", l.max_row_ulp},
                          {"rel_l2", td.rel_l2},                 {"max_abs", td.max_abs},
                          {"elements", double(td.numel)},        {"differing", double(td.differing)}};
        }
        if (!j.inside) ck.summary += ": " + j.why;
        out.push_back(ck);
    }
    return out;
}

std::vector<bf16> tensor_core_like_proj(const StepInputs& in, const std::vector<bf16>& x, double differing_fraction) {
    const Config& c = in.cfg;
    const int64_t n = int64_t(c.S()) * c.N;
    std::vector<bf16> proj(static_cast<size_t>(n));
    // an element whose exact value lies within differing_fraction of half an ulp of a tie goes the
    // other way: decided element by element (as a GEMM's rounding is), so a row is the same in any step
    const double near = 0.5 * (1 - differing_fraction);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const bf16* xr = &x[size_t(i / c.N) * c.D];
        const bf16* wr = &in.in_proj_w[size_t(i % c.N) * c.D];
        // bf16 products are exact in double, and so is a sum of 7168 of them to 2^-40 or so; the
        // first term starts it, as the reference's sums start (the sign of an exact zero)
        double p = c.D > 0 ? xr[0].to_double() * wr[0].to_double() : 0.0;
        for (int d = 1; d < c.D; ++d) p += xr[d].to_double() * wr[d].to_double();
        const bf16 r = bf16::round(p);
        const double rv = r.to_double();
        proj[size_t(i)] = r;
        if (p == rv || !std::isfinite(p)) continue;
        const int32_t o = bf16_ordered(r.bits) + (p > rv ? 1 : -1);  // the neighbour on p's side
        const bf16 nb = bf16::from_bits(uint16_t(o >= 0 ? o : (0x8000 | -o)));
        if (!std::isfinite(nb.to_double())) continue;
        if (std::fabs(p - rv) / std::fabs(nb.to_double() - rv) > near) proj[size_t(i)] = nb;  // 0.5: a tie
    }
    return proj;
}

emu::Envelope widen_for(const emu::Envelope& env, InProj p, const StepInputs& in, const TensorFile& oracle,
                        const Thresholds& t) {
    if (p == InProj::exact) return env;
    emu::Envelope out = env;
    const double frac = 1 - t.stage_identical_tensor_cores;
    for (const char* order : {"sequential", "pairwise"}) {
        const ReductionOrder ord = ReductionOrder::parse(order);
        StepOutputs<float> s;
        ref::attnres<float>(in, ord, s.prefix_out, s.blocks, s.x);
        s.proj = tensor_core_like_proj(in, s.x, frac);
        s.g1 = ref::f_b<float>(in, ord, s.proj);
        ref::short_conv<float>(in, s.proj, s.qkv, s.conv_state);
        ref::recurrence<float>(in, ord, s.qkv, s.proj, s.g1, s.o, s.ssm_state);
        s.core_out = ref::out_norm<float>(in, ord, s.o, s.proj);
        std::vector<TensorDiff> dist;
        for (const emu::EnvelopeBound& b : out.outputs)
            dist.push_back(diff_tensors(b.name, tensor_of(in.cfg, s, b.name), oracle.get(b.name)));
        emu::add_envelope_sample(out, std::string("tensor-cores:") + order, dist);
    }
    out.widening += (out.widening.empty() ? "" : "; ") + std::string("in_proj through tensor cores: two runs with ") +
                    pct(frac) + " of proj's roundings (those nearest a tie) flipped, the later stages recomputed";
    return out;
}

MeasuredEnvelope measure_envelope(const StepInputs& in, int orders) {
    MeasuredEnvelope m;
    m.envelope = emu::build_envelope(in, emu::default_envelope_orders(orders > 0 ? orders : emu::default_envelope_order_count(in.cfg)),
                                     &m.oracle);
    return m;
}

MeasuredEnvelope envelope_for(const StepInputs& in, const Candidate& c, InProj p, int orders, const std::string& declared) {
    const int widest = emu::max_envelope_order_count();
    const int n = orders > 0 ? orders : emu::default_envelope_order_count(in.cfg);
    std::vector<std::string> list = emu::default_envelope_orders(n);
    const std::string own = declared.empty() ? "" : ReductionOrder::parse(declared).str();
    if (!own.empty() && std::find(list.begin(), list.end(), own) == list.end()) list.push_back(own);
    MeasuredEnvelope m;
    m.envelope = widen_for(emu::build_envelope(in, list, &m.oracle), p, in, m.oracle);
    if (orders != 0 || n >= widest || !first_failure(envelope_checks(in, c, m.envelope, m.oracle))) return m;
    // the rest of the list, against the same oracle (an envelope's bounds are the worst over its
    // samples, so samples added after the tensor-core runs give the same bounds)
    std::vector<std::string> rest;
    for (const std::string& o : emu::default_envelope_orders(widest))
        if (std::find(list.begin(), list.end(), o) == list.end()) rest.push_back(o);
    emu::add_envelope_orders(m.envelope, in, rest, m.oracle);
    m.envelope.widening += (m.envelope.widening.empty() ? "" : "; ") + std::string("re-measured with all ") +
                           std::to_string(widest) + " orders: the candidate is outside the " + std::to_string(n) +
                           "-order sample";
    return m;
}

}  // namespace monokda::verify
