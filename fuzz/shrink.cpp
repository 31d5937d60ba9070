// Shrinking a failing step (fuzz/shrink.hpp), each reduction kept only while the same check still fails.
#include "fuzz/shrink.hpp"

#include <chrono>
#include <functional>

#include "core/error.hpp"
#include "fuzz/checks.hpp"
#include "properties/transforms.hpp"

namespace monokda::fuzz {

using props::Verdict;

long long nonzero_inputs(const StepInputs& in) {
    long long n = 0;
    auto b = [&](const std::vector<bf16>& v) { for (bf16 x : v) n += (x.bits & 0x7fff) != 0; };
    auto f = [&](const std::vector<float>& v) { for (float x : v) n += x != 0.0f; };
    b(in.prefix); b(in.delta); b(in.blocks); b(in.res_norm_w); b(in.res_proj_w); b(in.input_norm_w);
    b(in.in_proj_w); b(in.f_b_w); f(in.conv_w); f(in.A_log); f(in.dt_bias); b(in.o_norm_w);
    b(in.conv_state); f(in.ssm_state);
    return n;
}

std::string step_summary(const StepInputs& in) {
    const Config& c = in.cfg;
    return "R=" + std::to_string(c.R) + " L=" + std::to_string(c.L) + " S=" + std::to_string(c.S()) +
           " nb=" + std::to_string(c.nb) + (c.block_write ? " bw" : "") + " D=" + std::to_string(c.D) +
           " H=" + std::to_string(c.H) + " K=" + std::to_string(c.K) + " F=" + std::to_string(c.F) +
           " N=" + std::to_string(c.N) + " slots=" + std::to_string(c.slots) + " " + to_string(c.conv_layout);
}

namespace {

using Edit = std::function<StepInputs(const StepInputs&)>;

// Live slots renamed 1..n in order of first use; every other slot except 0 dropped.
StepInputs compact_slots(const StepInputs& in) {
    std::vector<int32_t> map(size_t(in.cfg.slots), -1);
    map[0] = 0;
    int n = 0;
    for (int32_t s : in.state_indices)
        if (s > 0 && map[size_t(s)] < 0) map[size_t(s)] = ++n;
    Rng rng(1);
    return props::relabel_slots(in, map, n + 1, rng);
}

template <class T> void zero(std::vector<T>& v, size_t lo, size_t hi) { std::fill(v.begin() + long(lo), v.begin() + long(hi), T{}); }

}  // namespace

ShrinkResult shrink_failure(const props::Target& target, const std::string& check, uint64_t check_seed,
                            const StepInputs& failing, double max_seconds, bool keep_dims) {
    ShrinkResult res;
    res.in = failing;
    const auto t0 = std::chrono::steady_clock::now();
    auto out_of_time = [&] {
        res.timed_out = res.timed_out ||
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > max_seconds;
        return res.timed_out;
    };
    // Applies the edit; keeps it if the check still fails. An edit that makes an invalid step is refused.
    auto attempt = [&](const std::string& what, const Edit& edit, bool value_edit = false) {
        if (out_of_time()) return false;
        StepInputs cand;
        try {
            cand = edit(res.in);
            cand.cfg.validate();
            cand.validate_step();
        } catch (const BadInput&) {
            return false;
        }
        if (value_edit ? nonzero_inputs(cand) == nonzero_inputs(res.in) : cand == res.in) return false;
        ++res.tried;
        if (run_target_and_check(check, target, cand, check_seed).kind != Verdict::FAIL) return false;
        res.in = std::move(cand);
        ++res.taken;
        res.steps.push_back(what + " -> " + step_summary(res.in));
        return true;
    };

    for (int round = 0; round < 4 && !out_of_time(); ++round) {
        const int taken_before = res.taken;
        // requests: drop chunks, halving the chunk size (ddmin-style)
        for (int chunk = std::max(1, res.in.cfg.R / 2); chunk >= 1; chunk /= 2) {
            for (int lo = 0; lo < res.in.cfg.R && res.in.cfg.R > 1;) {
                const int R = res.in.cfg.R, hi = std::min(R, lo + chunk);
                if (hi - lo == R) break;
                std::vector<int> keep;
                for (int r = 0; r < R; ++r)
                    if (r < lo || r >= hi) keep.push_back(r);
                if (!attempt("drop requests " + std::to_string(lo) + ".." + std::to_string(hi - 1),
                             [&](const StepInputs& s) { return props::select_requests(s, keep); }))
                    lo = hi;
            }
            if (chunk == 1) break;
        }
        // tokens, then bank rows, smallest first
        for (int L2 = 1; L2 < res.in.cfg.L; ++L2)
            if (attempt("L -> " + std::to_string(L2), [&](const StepInputs& s) { return props::truncate_tokens(s, L2); })) break;
        if (res.in.cfg.block_write)
            attempt("no block write", [](const StepInputs& s) { StepInputs v = s; v.cfg.block_write = false; return v; });
        for (int nb2 = 1; nb2 < res.in.cfg.nb; ++nb2)
            if (attempt("nb -> " + std::to_string(nb2), [&](const StepInputs& s) { StepInputs v = s; v.cfg.nb = nb2; return v; })) break;
        // slots and layout
        attempt("compact slots", compact_slots);
        if (res.in.cfg.conv_layout != ConvLayout::sd) attempt("sd layout", [](const StepInputs& s) { return s.with_conv_layout(ConvLayout::sd); });
        // dims: each to the smallest size that still fails (unless the target takes one shape only)
        if (!keep_dims) {
            const Config c = res.in.cfg;
            for (int H2 = 1; H2 < c.H; ++H2)
                if (attempt("H -> " + std::to_string(H2), [&](const StepInputs& s) { return props::restrict_dims(s, s.cfg.D, H2, s.cfg.K, s.cfg.F); })) break;
            for (int K2 = 1; K2 < c.K; K2 *= 2)
                if (attempt("K -> " + std::to_string(K2), [&](const StepInputs& s) { return props::restrict_dims(s, s.cfg.D, s.cfg.H, K2, s.cfg.F); })) break;
            for (int D2 = 1; D2 < c.D; D2 *= 2)
                if (attempt("D -> " + std::to_string(D2), [&](const StepInputs& s) { return props::restrict_dims(s, D2, s.cfg.H, s.cfg.K, s.cfg.F); })) break;
            for (int F2 = 1; F2 < c.F; F2 *= 2)
                if (attempt("F -> " + std::to_string(F2), [&](const StepInputs& s) { return props::restrict_dims(s, s.cfg.D, s.cfg.H, s.cfg.K, F2); })) break;
        }
        // values: whole tensors to zero, then halves of the activation rows
        const std::vector<std::pair<const char*, Edit>> zeros = {
            {"delta = 0", [](const StepInputs& s) { StepInputs v = s; zero(v.delta, 0, v.delta.size()); return v; }},
            {"blocks = 0", [](const StepInputs& s) { StepInputs v = s; zero(v.blocks, 0, v.blocks.size()); return v; }},
            {"prefix = 0", [](const StepInputs& s) { StepInputs v = s; zero(v.prefix, 0, v.prefix.size()); return v; }},
            {"conv_state = 0", [](const StepInputs& s) { StepInputs v = s; zero(v.conv_state, 0, v.conv_state.size()); return v; }},
            {"ssm_state = 0", [](const StepInputs& s) { StepInputs v = s; zero(v.ssm_state, 0, v.ssm_state.size()); return v; }},
            {"dt_bias = 0", [](const StepInputs& s) { StepInputs v = s; zero(v.dt_bias, 0, v.dt_bias.size()); return v; }},
            {"A_log = 0", [](const StepInputs& s) { StepInputs v = s; zero(v.A_log, 0, v.A_log.size()); return v; }},
            {"res_proj_w = 0", [](const StepInputs& s) { StepInputs v = s; zero(v.res_proj_w, 0, v.res_proj_w.size()); return v; }},
            {"f_b_w = 0", [](const StepInputs& s) { StepInputs v = s; zero(v.f_b_w, 0, v.f_b_w.size()); return v; }},
            {"conv_w = 0", [](const StepInputs& s) { StepInputs v = s; zero(v.conv_w, 0, v.conv_w.size()); return v; }},
        };
        for (const auto& [what, edit] : zeros) attempt(what, edit, true);
        for (const char* name : {"prefix", "delta", "blocks"}) {
            if (res.in.cfg.S() > 64) break;  // row by row only once the step is small
            auto rows_of = [name](StepInputs& v) -> std::vector<bf16>& {
                return std::string(name) == "prefix" ? v.prefix : std::string(name) == "delta" ? v.delta : v.blocks;
            };
            const size_t width = std::string(name) == "blocks" ? 8 * size_t(res.in.cfg.D) : size_t(res.in.cfg.D);
            const size_t rows = size_t(res.in.cfg.S());
            for (size_t chunk = std::max<size_t>(1, rows / 2); chunk >= 1; chunk /= 2) {
                for (size_t lo = 0; lo < rows; lo += chunk)
                    attempt(std::string(name) + " rows " + std::to_string(lo) + ".." + std::to_string(std::min(rows, lo + chunk) - 1) + " = 0",
                            [&](const StepInputs& s) {
                                StepInputs v = s;
                                zero(rows_of(v), lo * width, std::min(rows, lo + chunk) * width);
                                return v;
                            }, true);
                if (chunk == 1) break;
            }
        }
        if (res.taken == taken_before) break;
    }
    return res;
}

}  // namespace monokda::fuzz
