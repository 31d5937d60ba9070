// SPEC §5's teacher-forced checks: each reference stage fed the candidate's own exported inputs to
// it, its output held to the stage floor (a count of flips, widened where the stage's own sums,
// reordered, move more on this step) and to 1 bf16 ulp at row scale; ssm_state per slot and head.
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "core/compare.hpp"
#include "reference/reference.hpp"
#include "verify/check_draft.hpp"

namespace monokda::verify {

using namespace detail;

namespace {

// A [S, width] bf16 stage output against the reference stage's: the identical fraction against
// `floor` (with the small-step allowance) and the row-scale ulp bound. Where more elements differ
// than the floor allows, `noise` measures how many reordering the stage's own sums alone moves on
// this step (the most over other orders, fed the same inputs): up to that (with its margin) passes.
template <class Noise>
Check judge_stage(Draft d, const std::vector<bf16>& cand, const std::vector<bf16>& want, double floor,
                  const Thresholds& t, const std::string& fed, Noise noise) {
    const Config& c = d.cfg;
    const int width = row_width(c, d.ck.tensor);
    const std::vector<int64_t> shape{c.S(), width};
    const TensorDiff diff = diff_tensors(d.ck.tensor, Tensor::of(DType::BF16, shape, cand), Tensor::of(DType::BF16, shape, want));
    Check& ck = d.ck;
    ck.elements = diff.numel;
    ck.differing = diff.differing;
    const int64_t by_floor = allowed_differing(diff.numel, floor, t);
    int64_t reordered = -1, allowed = by_floor;  // reordered: what other orders move (measured only when needed)
    if (diff.differing > by_floor) {
        reordered = noise();
        allowed = std::max(by_floor, int64_t(std::floor(double(reordered) * (1 + t.stage_noise_margin))));
    }
    const bool rate_ok = diff.differing <= allowed, ulp_ok = diff.max_row_ulp <= t.stage_row_ulp && !diff.nan_mismatch;
    ck.status = rate_ok && ulp_ok ? Status::passed : Status::failed;
    if (!ulp_ok) {
        // the first element over the bound (or NaN against a number)
        for (int64_t s = 0; s < c.S() && !ck.has_first; ++s) {
            double scale = 0;
            for (int i = 0; i < width; ++i) scale = std::fmax(scale, std::fabs(value_of(want[size_t(s * width + i)])));
            const double ulp = bf16_row_ulp(scale);
            for (int i = 0; i < width; ++i) {
                const size_t k = size_t(s * width + i);
                const double a = value_of(cand[k]), b = value_of(want[k]);
                if (cand[k].bits == want[k].bits || (std::isnan(a) && std::isnan(b))) continue;
                if (std::isnan(a) != std::isnan(b) || !(std::fabs(a - b) <= t.stage_row_ulp * ulp)) {
                    d.first(int64_t(k), cand[k], want[k]);
                    break;
                }
            }
        }
    } else if (diff.first_differing >= 0) {
        d.first(diff.first_differing, cand[size_t(diff.first_differing)], want[size_t(diff.first_differing)]);
    }
    ck.summary = fed + ": " + pct(diff.frac_identical) + " bit-identical (floor " + pct(floor) + ": " +
                 std::to_string(diff.differing) + " of " + std::to_string(diff.numel) + " differ, " +
                 std::to_string(by_floor) + " allowed" +
                 (reordered >= 0 ? "; reordering the stage's sums alone moves " + std::to_string(reordered) + " here, " +
                                       std::to_string(allowed) + " allowed"
                                 : "") +
                 "), max " + fmt("%.3g", diff.max_row_ulp) + " ulp at row scale (bound " + fmt("%g", t.stage_row_ulp) + ")" +
                 (diff.nan_mismatch ? ", NaN against a number" : "");
    ck.numbers = {{"frac_identical", diff.frac_identical}, {"min_frac_identical", floor},
                  {"elements", double(diff.numel)},       {"differing", double(diff.differing)},
                  {"allowed_differing", double(allowed)}, {"reordered_differing", double(reordered)},
                  {"max_row_ulp", diff.max_row_ulp},      {"max_row_ulp_bound", t.stage_row_ulp},
                  {"rel_l2", diff.rel_l2}};
    return ck;
}


// The stage that gives bf16 `tensor` from `inputs` (the candidate's): compute(U*, order) is the
// reference stage in U (float or double) and that order. Not checked when an input or the output
// is not exported.
template <class T, class Compute>
Check bf16_stage(const StepInputs& in, const Candidate& cand, const Options& opt, const char* tensor,
                 std::initializer_list<const char*> inputs, const std::string& fed, Compute compute) {
    const Config& c = in.cfg;
    const Thresholds& t = opt.thresholds;
    Draft d(c, std::string("stage.") + tensor, "stage", tensor);
    std::vector<const char*> all(inputs);
    all.push_back(tensor);
    const std::string missing = not_exported(cand, all);
    if (!missing.empty()) return d.not_checked("needs " + missing + " (not exported)");
    const double floor = std::string(tensor) == "proj" && opt.in_proj == InProj::tensor_cores ? t.stage_identical_tensor_cores
                                                                                               : t.stage_identical;
    const std::vector<bf16> want = compute(static_cast<T*>(nullptr), opt.stage_order);
    // the noise: the f32 stage in other orders against `want` (for the oracle, T = double: how far
    // an f32 evaluation in any order moves from the correctly rounded stage)
    auto noise = [&] {
        int64_t most = 0;
        for (const std::string& other : emu::default_envelope_orders(emu::default_envelope_order_count(c))) {
            const ReductionOrder r = ReductionOrder::parse(other);
            if (std::is_same_v<T, float> && r.str() == opt.stage_order.str()) continue;
            const std::vector<bf16> v = compute(static_cast<float*>(nullptr), r);
            int64_t n = 0;
            for (size_t i = 0; i < v.size(); ++i) n += v[i].bits != want[i].bits;
            most = std::max(most, n);
        }
        return most;
    };
    return judge_stage(d, bf16_tensor(cand.out, tensor), want, floor, t, fed, noise);
}

// stage.ssm_state: E's states (fed the candidate's qkv, proj, g1) of the written slots, per slot and
// head max |a - b| <= state_rel * max |b|. rec_state: E's states, empty when E could not be fed.
template <class T>
Check ssm_stage(const StepInputs& in, const Candidate& cand, const std::vector<T>& rec_state, const Thresholds& t) {
    const Config& c = in.cfg;
    Draft d(c, "stage.ssm_state", "stage", "ssm_state");
    const std::string missing = not_exported(cand, {"qkv", "proj", "g1"});
    if (!missing.empty()) return d.not_checked("needs " + missing + " (not exported)");
    const std::vector<char> w = ssm_written(in);
    const size_t per = size_t(c.V) * c.K;
    double worst = 0, num = 0, den = 0;
    bool nan_mismatch = false;
    for (int s = 0; s < c.slots; ++s) {
        if (!w[size_t(s)]) continue;
        for (int h = 0; h < c.H; ++h) {
            const size_t off = (size_t(s) * c.H + h) * per;
            double scale = 0;
            for (size_t i = 0; i < per; ++i) scale = std::fmax(scale, std::fabs(double(float(rec_state[off + i]))));
            for (size_t i = 0; i < per; ++i, ++d.ck.elements) {
                const double a = cand.out.ssm_state[off + i], b = double(float(rec_state[off + i]));
                if (std::isnan(a) || std::isnan(b)) {
                    if (std::isnan(a) != std::isnan(b)) nan_mismatch = true, d.note(int64_t(off + i), float(a), float(b));
                    continue;
                }
                const double err = std::fabs(a - b);
                num += err * err, den += b * b;
                const double rel = err == 0 ? 0 : scale > 0 ? err / scale : INFINITY;
                worst = std::max(worst, rel);
                if (rel > t.state_rel) d.note(int64_t(off + i), float(a), float(b));
            }
        }
    }
    Check& ck = d.ck;
    ck.status = ck.differing ? Status::failed : Status::passed;
    if (!ck.elements) ck.status = Status::not_checked;
    const double rel_l2 = den > 0 ? std::sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
    ck.summary = ck.elements ? "E fed the candidate's qkv, proj, g1, written slots: max |diff| " + fmt("%.3g", worst) +
                                   " of the slot-head's largest magnitude (bound " + fmt("%g", t.state_rel) + "), " +
                                   std::to_string(ck.differing) + " of " + std::to_string(ck.elements) +
                                   " over, rel-L2 " + fmt("%.3g", rel_l2) + (nan_mismatch ? ", NaN against a number" : "")
                             : "no slot is written (no request has an initial state)";
    ck.numbers = {{"max_rel", worst}, {"max_rel_bound", t.state_rel}, {"elements", double(ck.elements)},
                  {"over_bound", double(ck.differing)}, {"rel_l2", rel_l2}};
    return ck;
}

}  // namespace

template <class T>
std::vector<Check> stage_checks(const StepInputs& in, const Candidate& cand, const Options& opt) {
    const StepOutputs<float>& o = cand.out;
    const ReductionOrder& ord = opt.stage_order;
    std::vector<Check> out;
    // each stage as compute(U*, order): the reference stage in U (float or double) and that order
    out.push_back(bf16_stage<T>(in, cand, opt, "x", {}, "A on the fixture", [&](auto* u, const ReductionOrder& r) {
        using U = std::remove_pointer_t<decltype(u)>;
        std::vector<bf16> po, bl, x;
        ref::attnres<U>(in, r, po, bl, x);
        return x;
    }));
    out.push_back(bf16_stage<T>(in, cand, opt, "proj", {"x"}, "B fed the candidate's x", [&](auto* u, const ReductionOrder& r) {
        return ref::in_proj<std::remove_pointer_t<decltype(u)>>(in, r, o.x);
    }));
    out.push_back(bf16_stage<T>(in, cand, opt, "g1", {"proj"}, "C fed the candidate's proj", [&](auto* u, const ReductionOrder& r) {
        return ref::f_b<std::remove_pointer_t<decltype(u)>>(in, r, o.proj);
    }));
    out.push_back(bf16_stage<T>(in, cand, opt, "qkv", {"proj"}, "D fed the candidate's proj", [&](auto* u, const ReductionOrder&) {
        std::vector<bf16> qkv, conv;
        ref::short_conv<std::remove_pointer_t<decltype(u)>>(in, o.proj, qkv, conv);  // no sum: one order
        return qkv;
    }));
    // E once for o and ssm_state (again in other orders only for the noise of o)
    std::vector<bf16> rec_o;
    std::vector<T> rec_state;
    if (not_exported(cand, {"qkv", "proj", "g1"}).empty()) ref::recurrence<T>(in, ord, o.qkv, o.proj, o.g1, rec_o, rec_state);
    out.push_back(bf16_stage<T>(in, cand, opt, "o", {"qkv", "proj", "g1"}, "E fed the candidate's qkv, proj, g1",
                                [&](auto* u, const ReductionOrder& r) {
                                    using U = std::remove_pointer_t<decltype(u)>;
                                    if (std::is_same_v<U, T> && r.str() == ord.str()) return rec_o;
                                    std::vector<bf16> oo;
                                    std::vector<U> st;
                                    ref::recurrence<U>(in, r, o.qkv, o.proj, o.g1, oo, st);
                                    return oo;
                                }));
    out.push_back(ssm_stage<T>(in, cand, rec_state, opt.thresholds));
    out.push_back(bf16_stage<T>(in, cand, opt, "core_out", {"o", "proj"}, "F fed the candidate's o, proj",
                                [&](auto* u, const ReductionOrder& r) {
                                    return ref::out_norm<std::remove_pointer_t<decltype(u)>>(in, r, o.o, o.proj);
                                }));
    return out;
}

template std::vector<Check> stage_checks<float>(const StepInputs&, const Candidate&, const Options&);
template std::vector<Check> stage_checks<double>(const StepInputs&, const Candidate&, const Options&);

}  // namespace monokda::verify
