// The kernel against the reference on k3 fixtures, on the GPU (SPEC §5):
//   bit-exact: prefix_out, blocks, conv_state (kept entries, and new entries = the kernel's own
//     proj), untouched ssm slots, everything of requests without an initial state;
//   stage by stage: each reference stage fed with the kernel's exported hand-offs, evaluated in
//     the plan's reduction order, must give the kernel's stage output (>= 99.9 % bit-identical,
//     <= 1 bf16 ulp at row scale);
//   end to end against the sequential reference: order-sensitive tensors inside the envelope that
//     permuted reduction orders of the reference itself span (measured here, on the same fixture).
// MONOKDA_GPU_SWEEP=quick runs a handful of cases; the default is the whole sweep.
#include <algorithm>
#include <cstring>
#include <map>

#include "tests/gpu/gpu_harness.hpp"

using namespace monokda;
using namespace monokda::gpu_test;

namespace {

std::vector<Case> sweep() {
    const std::vector<std::pair<int, int>> splits = {
        {1, 1},  {2, 1},  {1, 2},  {3, 1},  {1, 3},  {4, 1},  {2, 2},  {1, 4},  {5, 1},  {1, 5},  {7, 1}, {1, 7},
        {8, 1},  {2, 4},  {1, 8},  {12, 1}, {3, 4},  {2, 6},  {16, 1}, {2, 8},  {4, 4},  {24, 1}, {3, 8}, {6, 4},
        {32, 1}, {4, 8},  {8, 4},  {48, 1}, {6, 8},  {12, 4}, {64, 1}, {8, 8},  {16, 4}, {32, 2}};
    std::vector<Case> out;
    for (size_t i = 0; i < splits.size(); ++i) {
        Case k;
        k.R = splits[i].first, k.L = splits[i].second;
        k.nb = std::vector<int>{1, 4, 8}[i % 3];
        k.block_write = i % 2 == 0 && k.nb <= 7;
        k.layout = i % 4 < 2 ? ConvLayout::sd : ConvLayout::ds;
        k.seed = 100 + i;
        k.null_requests = i % 7 == 3 ? k.R : (k.R >= 2 && i % 3 == 1 ? 1 : 0);
        k.partial_null = i % 5 == 2 && k.L >= 2;
        out.push_back(k);
    }
    const char* mode = std::getenv("MONOKDA_GPU_SWEEP");
    if (mode && std::string(mode) == "quick") {
        std::vector<Case> q;
        for (size_t i : {size_t(0), size_t(6), size_t(13), size_t(25), size_t(31), size_t(33)}) q.push_back(out[i]);
        return q;
    }
    return out;
}

struct Envelope {
    double mismatch = 0, row_ulp = 0, rel_l2 = 0;
};

// How far the reference moves from its own sequential order under other orders, per tensor.
std::map<std::string, Envelope> envelope(const StepInputs& in, const TensorFile& seq) {
    std::map<std::string, Envelope> env;
    for (const char* o : {"pairwise", "split:7", "shuffle:11", "shuffle:12"}) {
        const TensorFile f = ref::run<float>(in, ReductionOrder::parse(o)).to_file(in.cfg);
        for (const char* n : {"x", "proj", "g1", "qkv", "o", "core_out", "ssm_state"}) {
            const TensorDiff d = diff_tensors(n, f.get(n), seq.get(n));
            Envelope& e = env[n];
            e.mismatch = std::max(e.mismatch, 1.0 - d.frac_identical);
            e.row_ulp = std::max(e.row_ulp, d.max_row_ulp);
            e.rel_l2 = std::max(e.rel_l2, d.rel_l2);
        }
    }
    return env;
}

}  // namespace

TEST_CASE("kda_pre matches the reference over the sweep (bit-exact, stage by stage, envelope)") {
    require_gpu();
    const std::vector<Case> cases = sweep();
    log_line("sweep.md", std::string("\n### sweep: ") + std::to_string(cases.size()) + " cases, in_proj " +
                             (exact_in_proj() ? "exact order" : "matrix unit") + "\n\n" + kTableHead);
    int index = 0;
    for (const Case& k : cases) {
        const int i = index++;
        CAPTURE(k.name());
        const StepInputs in = make_case(k);
        const Config& c = in.cfg;
        gpu::KdaRunner runner(in, run_options());
        runner.run();
        const StepOutputs<float> g = runner.outputs();
        const TensorFile gf = g.to_file(c);
        const StepOutputs<float> r = ref::run<float>(in);
        const TensorFile rf = r.to_file(c);
        const std::string cname =
            k.name() + (exact_in_proj() ? " exact-in_proj" : "") + " (" + std::to_string(runner.last_ms()) + " ms)";

        // bit-exact
        for (const char* n : {"prefix_out", "blocks"}) {
            const TensorDiff d = diff_tensors(n, gf.get(n), rf.get(n));
            log_line("sweep.md", row(cname + " exact", d));
            CHECK_MESSAGE(d.frac_identical == 1.0, n, " not bit-exact");
        }
        {
            std::vector<bf16> qkv_t, conv_t;  // conv_state expected from the kernel's own proj
            ref::short_conv<float>(in, g.proj, qkv_t, conv_t);
            const TensorDiff d = diff_tensors("conv_state", gf.get("conv_state"),
                                              Tensor::of(DType::BF16, gf.get("conv_state").shape, conv_t));
            log_line("sweep.md", row(cname + " exact (own proj)", d));
            CHECK_MESSAGE(d.frac_identical == 1.0, "conv_state not bit-exact");
        }
        {
            // slots no live recurrence writes keep their bytes; requests without an initial state
            // output o = +0 and core_out bit-exact
            std::vector<char> written(size_t(c.slots), 0);
            for (int rq = 0; rq < c.R; ++rq)
                if (in.idx(rq, in.num_accepted[size_t(rq)] - 1) > 0)
                    for (int t = 0; t < c.L; ++t)
                        if (in.idx(rq, t) > 0) written[size_t(in.idx(rq, t))] = 1;
            const size_t per = size_t(c.H) * c.V * c.K;
            int64_t bad = 0;
            for (int s = 0; s < c.slots; ++s)
                if (!written[size_t(s)])
                    bad += std::memcmp(&g.ssm_state[size_t(s) * per], &in.ssm_state[size_t(s) * per], per * 4) != 0;
            CHECK_MESSAGE(bad == 0, bad, " untouched ssm_state slots changed");
            int64_t null_bad = 0, null_rows = 0;
            for (int rq = 0; rq < c.R; ++rq) {
                if (in.idx(rq, in.num_accepted[size_t(rq)] - 1) > 0) continue;
                for (int t = 0; t < c.L; ++t) {
                    const size_t s = size_t(rq * c.L + t) * c.E();
                    ++null_rows;
                    for (int e = 0; e < c.E(); ++e) {
                        null_bad += g.o[s + size_t(e)].bits != 0;
                        null_bad += g.core_out[s + size_t(e)].bits != r.core_out[s + size_t(e)].bits;
                    }
                }
            }
            CHECK_MESSAGE(null_bad == 0, null_bad, " elements of requests without an initial state differ");
            char b[200];
            snprintf(b, sizeof b, "| %s exact | untouched ssm slots, null-request o/core_out (%lld rows) | | %s | | | |",
                     cname.c_str(), (long long)null_rows, bad == 0 && null_bad == 0 ? "100.00000" : "DIFFER");
            log_line("sweep.md", b);
        }

        // stage by stage, in the plan's order
        PlanParams pp = PlanParams::preset("k3");
        pp.blocks = gpu::probe().sms;
        const ReductionOrder ord = Plan::build(c, pp).reduction_order();
        std::vector<bf16> po, bl, x_t;
        ref::attnres<float>(in, ord, po, bl, x_t);
        std::vector<bf16> qkv_t, conv_t, o_t;
        ref::short_conv<float>(in, g.proj, qkv_t, conv_t);
        std::vector<float> ssm_t;
        ref::recurrence<float>(in, ord, g.qkv, g.proj, g.g1, o_t, ssm_t);
        const std::vector<std::pair<std::string, std::vector<bf16>>> stages = {
            {"x", x_t},
            {"proj", ref::in_proj<float>(in, ord, g.x)},
            {"g1", ref::f_b<float>(in, ord, g.proj)},
            {"qkv", qkv_t},
            {"o", o_t},
            {"core_out", ref::out_norm<float>(in, ord, g.o, g.proj)}};
        for (const auto& [n, v] : stages) {
            const Tensor& mine = gf.get(n);
            const TensorDiff d = diff_tensors(n, mine, Tensor::of(DType::BF16, mine.shape, v));
            log_line("sweep.md", row(cname + " stage", d));
            // an in_proj through the matrix unit sums in its own order: SPEC §5 expects about 99.6 %
            const double need = n == "proj" && !exact_in_proj() ? 0.995 : 0.999;
            CHECK_MESSAGE(d.frac_identical >= need, n, " stage only ", 100 * d.frac_identical, "% bit-identical");
            CHECK_MESSAGE(d.max_row_ulp <= 1.0, n, " stage off by ", d.max_row_ulp, " ulp at row scale");
            CHECK_FALSE(d.nan_mismatch);
        }
        {
            const Tensor& mine = gf.get("ssm_state");
            const TensorDiff d = diff_tensors("ssm_state", mine, Tensor::of(DType::F32, mine.shape, ssm_t));
            log_line("sweep.md", row(cname + " stage", d));
            CHECK_MESSAGE(d.rel_l2 <= 1e-6, "ssm_state stage rel-L2 ", d.rel_l2);
            CHECK_FALSE(d.nan_mismatch);
        }

        // end to end against the sequential reference; envelope measured on some cases
        const char* env_mode = std::getenv("MONOKDA_GPU_ENVELOPE");  // "0": skip the envelope runs
        const bool with_envelope = (i % 6 == 0 || k.R * k.L == 64) && !(env_mode && std::string(env_mode) == "0");
        std::map<std::string, Envelope> env;
        if (with_envelope) env = envelope(in, rf);
        for (const char* n : {"x", "proj", "g1", "qkv", "o", "core_out", "ssm_state"}) {
            const TensorDiff d = diff_tensors(n, gf.get(n), rf.get(n));
            std::string line = row(cname + " end-to-end", d);
            if (with_envelope) {
                const Envelope& e = env[n];
                char b[160];
                snprintf(b, sizeof b, " envelope: mismatch %.5f%%, row ulp %.3g, rel-L2 %.3g", 100 * e.mismatch,
                         e.row_ulp, e.rel_l2);
                line += b;
                // inside the envelope, widened 2x plus a floor (documented in docs/kernel.md)
                CHECK_MESSAGE(1.0 - d.frac_identical <= 2 * e.mismatch + 1e-4, n, " outside the envelope");
                if (std::string(n) == "ssm_state")
                    CHECK_MESSAGE(d.rel_l2 <= 2 * e.rel_l2 + 1e-7, n, " outside the envelope");
                else
                    CHECK_MESSAGE(d.max_row_ulp <= 2 * e.row_ulp + 1, n, " outside the envelope");
            }
            log_line("sweep.md", line);
            CHECK_FALSE(d.nan_mismatch);
        }
    }
}

TEST_CASE("kda_pre is deterministic: two runs give identical bits") {
    require_gpu();
    for (Case k : {Case{64, 1, 8, false, ConvLayout::sd, 7}, Case{5, 1, 3, true, ConvLayout::ds, 8},
                   Case{8, 8, 4, true, ConvLayout::sd, 9}}) {
        CAPTURE(k.name());
        const StepInputs in = make_case(k);
        gpu::KdaRunner a(in, run_options()), b(in, run_options());
        a.run();
        b.run();
        const std::vector<uint8_t> x = a.output_bytes(), y = b.output_bytes();
        CHECK(x == y);
        a.restore_states();
        a.run();
        CHECK(a.output_bytes() == x);
        log_line("determinism.md", "| " + k.name() + " | 3 runs | " + (x == y && a.output_bytes() == x ? "identical" : "DIFFER") + " |");
    }
}
