// `monokda bench` on the GPU: the graph-replay timing of the fused kernel, the unfused chain and the
// floor; the unfused chain's outputs and its check against the reference (bench/gpu_bench.hpp).
#include "bench/gpu_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "bench/device_step.cuh"
#include "bench/fused_step.hpp"
#include "bench/step_floor.hpp"
#include "bench/unfused_path.cuh"
#include "core/compare.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "core/fixture_gen.hpp"
#include "reference/reference.hpp"
#include "core/plan_policy.hpp"

namespace monokda::bench {

namespace {

struct Timing {
    std::vector<double> us;  // per step, one sample a replay
    double median() const { return bench::median(us); }
    double pct(double q) const {
        std::vector<double> v = us;
        std::sort(v.begin(), v.end());
        return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
    }
};

class Stream {
public:
    Stream() { MONOKDA_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
    ~Stream() { cudaStreamDestroy(s_); }
    cudaStream_t get() const { return s_; }

private:
    cudaStream_t s_;
};

// Captures `steps` steps (step i on set i mod nsets) into one graph and replays it `reps` times,
// back to back, with an event between replays; a sample is a replay's time over its steps. The
// host enqueues ahead of the device, so graph launch gaps stay out of the samples.
Timing time_graph(cudaStream_t st, int nsets, int steps, int reps, const std::function<void(int, cudaStream_t)>& step) {
    cudaGraph_t graph = nullptr;
    MONOKDA_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    try {
        for (int i = 0; i < steps; ++i) step(i % nsets, st);
    } catch (...) {
        cudaStreamEndCapture(st, &graph);
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        throw;
    }
    MONOKDA_CUDA_CHECK(cudaStreamEndCapture(st, &graph));
    cudaGraphExec_t exec = nullptr;
    cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    MONOKDA_CUDA_CHECK(inst);
    std::vector<cudaEvent_t> ev(size_t(reps) + 1);
    for (auto& e : ev) MONOKDA_CUDA_CHECK(cudaEventCreate(&e));
    Timing t;
    try {
        for (int w = 0; w < 3; ++w) MONOKDA_CUDA_CHECK(cudaGraphLaunch(exec, st));
        MONOKDA_CUDA_CHECK(cudaEventRecord(ev[0], st));
        for (int i = 0; i < reps; ++i) {
            MONOKDA_CUDA_CHECK(cudaGraphLaunch(exec, st));
            MONOKDA_CUDA_CHECK(cudaEventRecord(ev[size_t(i) + 1], st));
        }
        MONOKDA_CUDA_CHECK(cudaStreamSynchronize(st));
        for (int i = 0; i < reps; ++i) {
            float ms = 0;
            MONOKDA_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[size_t(i)], ev[size_t(i) + 1]));
            t.us.push_back(double(ms) * 1e3 / steps);
        }
    } catch (...) {
        for (auto& e : ev) cudaEventDestroy(e);
        cudaGraphExecDestroy(exec);
        throw;
    }
    for (auto& e : ev) cudaEventDestroy(e);
    cudaGraphExecDestroy(exec);
    return t;
}

__global__ void read_stream_kernel(const uint4* p, size_t n, unsigned* sink) {
    unsigned acc = 0;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        const uint4 v = __ldcs(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;  // keeps the loads; practically never taken
}

struct Bandwidth {
    double copy_tb_s = 0, read_tb_s = 0;
};

// Device-to-device copy of 1 GiB (bytes read + written over time), and a 16-byte streaming read of
// the same buffer: the ceilings the floor and the stage bandwidths are held against.
Bandwidth measure_bandwidth(cudaStream_t st, int sms) {
    const size_t n = size_t(1) << 30;
    DeviceBuffer<uint8_t> a(n), b(n);
    DeviceBuffer<unsigned> sink(1);
    MONOKDA_CUDA_CHECK(cudaMemsetAsync(a.get(), 0x5a, n, st));
    MONOKDA_CUDA_CHECK(cudaMemsetAsync(b.get(), 0x33, n, st));
    cudaEvent_t e0, e1;
    MONOKDA_CUDA_CHECK(cudaEventCreate(&e0));
    MONOKDA_CUDA_CHECK(cudaEventCreate(&e1));
    auto timed = [&](const std::function<void()>& f) {
        std::vector<double> ms;
        for (int i = 0; i < 13; ++i) {
            MONOKDA_CUDA_CHECK(cudaEventRecord(e0, st));
            f();
            MONOKDA_CUDA_CHECK(cudaEventRecord(e1, st));
            MONOKDA_CUDA_CHECK(cudaEventSynchronize(e1));
            float t = 0;
            MONOKDA_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
            if (i >= 3) ms.push_back(t);  // the first three warm up
        }
        return median(ms);
    };
    Bandwidth bw;
    const double copy_ms = timed([&] { MONOKDA_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), n, cudaMemcpyDeviceToDevice, st)); });
    bw.copy_tb_s = 2.0 * double(n) / (copy_ms * 1e-3) / 1e12;
    const double read_ms = timed([&] {
        read_stream_kernel<<<sms * 8, 512, 0, st>>>(reinterpret_cast<const uint4*>(a.get()), n / 16, sink.get());
        MONOKDA_CUDA_CHECK(cudaGetLastError());
    });
    bw.read_tb_s = double(n) / (read_ms * 1e-3) / 1e12;
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return bw;
}


}  // namespace

// S = 1 … 64 in several R×L splits, and 24 rows twice: from 16 rows the plan spreads the in_proj
// bands over every CTA and splits the attn slices (core/plan.hpp PlanPolicy::k3_for)
std::vector<std::pair<int, int>> default_sweep() {
    return {{1, 1},  {1, 2},  {2, 1}, {1, 4},  {2, 2}, {4, 1},  {1, 8},  {2, 4},  {8, 1},  {2, 8},
            {4, 4},  {16, 1}, {3, 8}, {24, 1}, {4, 8}, {8, 4},  {32, 1}, {8, 8},  {16, 4}, {64, 1}};
}

PerfRun run_gpu_bench(const GpuBenchOptions& opt, std::ostream& log) {
    if (opt.sets < 3) bad_input("--sets must be at least 3, so that the L2 cannot hold a set's weights between steps");
    if (opt.reps < 5) bad_input("--reps must be at least 5");
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) bad_input("no CUDA device found");
    cudaDeviceProp prop;
    MONOKDA_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));

    Config model = Config::preset("k3");
    model.nb = opt.nb;
    model.block_write = opt.block_write;
    const SetCapacity cap{64, 64, 66, 10};
    auto shapes = opt.shapes.empty() ? default_sweep() : opt.shapes;
    // a shape's step, for the checks here and the runs below: every set holds cap.slots slots
    auto step_config = [&](int R, int L) {
        Config c = model;
        c.R = R;
        c.L = L;
        c.slots = cap.slots;
        return c;
    };
    for (const auto& [R, L] : shapes) {
        Config c = step_config(R, L);
        c.validate();
        make_dims(c);  // the unfused chain's limits (BadInput names the field)
        if (c.S() > cap.rows || R > cap.requests)
            bad_input("R=" + std::to_string(R) + " L=" + std::to_string(L) + ": the benchmark runs S = R·L <= 64");
    }

    PerfRun run;
    run.device = prop.name;
    run.commit = opt.commit.empty() ? "unknown" : opt.commit;
    run.date = utc_now();
    run.command = opt.command;
    run.sets = opt.sets;
    run.l2_bytes = prop.l2CacheSize;
    run.reps = opt.reps;
    run.steps_per_graph = opt.sets * opt.steps_per_set;

    Stream stream;
    const cudaStream_t st = stream.get();
    const Bandwidth bw = measure_bandwidth(st, prop.multiProcessorCount);
    run.copy_tb_s = bw.copy_tb_s;
    log << "device " << prop.name << ", " << prop.multiProcessorCount << " SMs, L2 " << prop.l2CacheSize / (1 << 20)
        << " MiB; copy " << fmt(bw.copy_tb_s, 3) << " TB/s (read+write), streaming read " << fmt(bw.read_tb_s, 3)
        << " TB/s\n";

    std::vector<std::unique_ptr<DeviceStepSet>> sets;
    for (int i = 0; i < opt.sets; ++i) {
        sets.push_back(std::make_unique<DeviceStepSet>(model, cap));
        sets.back()->fill_random(uint64_t(i) + 1);
    }
    run.set_bytes = int64_t(sets[0]->bytes());
    std::vector<StepPtrs> ptrs;
    for (const auto& s : sets) ptrs.push_back(s->ptrs());
    log << "rotating among " << opt.sets << " weight/state sets of " << fmt(double(run.set_bytes) / 1e6, 0)
        << " MB each (in_proj_w alone " << fmt(double(model.N) * model.D * 2 / 1e6, 1) << " MB; L2 "
        << fmt(double(prop.l2CacheSize) / 1e6, 0) << " MB): no step finds its weights in L2\n";

    std::string why;
    std::unique_ptr<FusedStep> fused = opt.fused ? make_fused_step(opt.fused_choices, why) : nullptr;
    if (!opt.fused) why = "not measured (--no-fused)";
    const bool chosen = !opt.fused_choices.is_production();
    run.fused_status = !fused ? why
                       : chosen ? "kernels/ launcher, one cooperative launch a step, no hand-off export, NOT the production "
                                  "choices: see the command"
                                : "kernels/ launcher with its default options (one cooperative launch a step, no hand-off export)";
    log << "fused kernel: " << run.fused_status << "\n";

    const int steps = run.steps_per_graph;
    const int stage_reps = std::max(5, opt.reps / 2);
    std::map<int, std::pair<int, int>> tuned;  // S -> chosen (B, C) candidates

    for (const auto& [R, L] : shapes) {
        const Config c = step_config(R, L);
        for (int i = 0; i < opt.sets; ++i) sets[size_t(i)]->set_step(c, 1000 + uint64_t(i));
        MONOKDA_CUDA_CHECK(cudaDeviceSynchronize());

        PerfRow row;
        row.R = R;
        row.L = L;
        row.S = c.S();
        row.nb = c.nb;
        row.block_write = c.block_write;
        const FloorBytes fb = step_floor_bytes(c);
        row.floor_bytes = fb.total();
        row.floor_us = double(fb.total()) / (bw.copy_tb_s * 1e12) * 1e6;
        const StageBytes sb = unfused_stage_bytes(c);
        std::copy(std::begin(sb.stage), std::end(sb.stage), row.stage_bytes);

        UnfusedPath up(c);
        if (auto it = tuned.find(c.S()); it != tuned.end()) {
            up.in_proj().choose(it->second.first);
            up.f_b().choose(it->second.second);
        } else {
            up.tune([&](const std::function<void(int, cudaStream_t)>& f) { return time_graph(st, opt.sets, steps, 20, f).median(); },
                    ptrs);
            tuned[c.S()] = {up.in_proj().chosen(), up.f_b().chosen()};
        }
        row.gemm_algos = up.algos();
        auto unfused = [&](unsigned mask) {
            return [&, mask](int set, cudaStream_t s) { up.enqueue(ptrs[size_t(set)], s, mask); };
        };

        Timing fu, un;
        int fused_reps = opt.reps;
        auto measure_fused = [&] {
            Timing t = time_graph(st, opt.sets, steps, fused_reps, [&](int set, cudaStream_t s) { fused->enqueue(set, s); });
            fused->check(st);  // a timed-out poll or refused step would make the number meaningless
            fu.us.insert(fu.us.end(), t.us.begin(), t.us.end());
        };
        auto measure_unfused = [&] {
            Timing t = time_graph(st, opt.sets, steps, opt.reps, unfused(kAllStages));
            un.us.insert(un.us.end(), t.us.begin(), t.us.end());
        };
        // one plain launch first: a shape the kernel refuses or a launch that times out is recorded
        // and skipped, not timed (a timed-out poll would cost its timeout in every replay)
        bool fused_ok = false;
        if (fused) {
            try {
                fused->prepare(c, ptrs);
                fused->enqueue(0, st);
                fused->check(st);
                // a slow kernel gets fewer replays (at least 20), so that a measurement stays near 0.5 s
                cudaEvent_t e0, e1;
                MONOKDA_CUDA_CHECK(cudaEventCreate(&e0));
                MONOKDA_CUDA_CHECK(cudaEventCreate(&e1));
                MONOKDA_CUDA_CHECK(cudaEventRecord(e0, st));
                fused->enqueue(1, st);
                MONOKDA_CUDA_CHECK(cudaEventRecord(e1, st));
                fused->check(st);
                float ms = 0;
                MONOKDA_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
                cudaEventDestroy(e0);
                cudaEventDestroy(e1);
                const double graph_s = double(ms) * 1e-3 * steps;
                fused_reps = std::max(std::min(opt.reps, 20), std::min(opt.reps, int(0.5 / graph_s)));
                fused_ok = true;
            } catch (const std::exception& e) {
                cudaGetLastError();
                const std::string msg = "R=" + std::to_string(R) + " L=" + std::to_string(L) + ": " + e.what();
                log << "fused kernel refused or failed, not timed: " << msg << "\n";
                run.fused_status += "; not measured at " + msg;
            }
        }
        // each headline number twice, before and after the stage variants, pooled
        if (fused_ok) measure_fused();
        measure_unfused();
        if (opt.stages)
            for (int i = 0; i < 6; ++i) {
                row.alone_us[i] = time_graph(st, opt.sets, steps, stage_reps, unfused(1u << i)).median();
                row.without_us[i] = time_graph(st, opt.sets, steps, stage_reps, unfused(kAllStages & ~(1u << i))).median();
            }
        if (fused_ok) measure_fused();
        measure_unfused();
        row.unfused_us = un.median();
        row.unfused_p10 = un.pct(0.1);
        row.unfused_p90 = un.pct(0.9);
        // where the fused kernel's time goes, at small R (cutting a plan costs host time per instruction)
        if (fused_ok && opt.stages && R <= 2) {
            try {
                for (FusedVariant v : {FusedVariant::attn, FusedVariant::attn_gemv}) {
                    fused->prepare(c, ptrs, v);
                    fused->enqueue(0, st);  // one plain launch first, as for the full plan
                    fused->check(st);
                    const double t = time_graph(st, opt.sets, steps, fused_reps, [&](int set, cudaStream_t s) { fused->enqueue(set, s); }).median();
                    fused->check(st);
                    (v == FusedVariant::attn ? row.fused_attn_us : row.fused_attn_gemv_us) = t;
                }
            } catch (const std::exception& e) {
                cudaGetLastError();
                log << "fused plan variants at R=" << R << " L=" << L << " not measured: " << e.what() << "\n";
                row.fused_attn_us.reset();
                row.fused_attn_gemv_us.reset();
            }
        }
        if (fused_ok) {
            row.fused_us = fu.median();
            row.fused_reps = fused_reps;
            row.fused_p10 = fu.pct(0.1);
            row.fused_p90 = fu.pct(0.9);
        }
        log << "R=" << R << " L=" << L << " S=" << c.S() << " nb=" << c.nb << ": floor " << fmt(row.floor_us) << " us"
            << (fused_ok && fused_reps != opt.reps ? " (fused: " + std::to_string(fused_reps) + " replays)" : "")
            << ", fused " << (row.fused_us ? fmt(*row.fused_us) + " us (" + fmt(*row.fused_us / row.floor_us, 2) + "x floor)" : "not measured")
            << ", unfused " << fmt(row.unfused_us) << " us"
            << (row.fused_us ? " (" + fmt(row.unfused_us / *row.fused_us, 2) + "x fused)" : "");
        if (row.fused_attn_us && row.fused_attn_gemv_us)
            log << " | fused attn only " << fmt(*row.fused_attn_us) << ", attn+gemv " << fmt(*row.fused_attn_gemv_us);
        if (opt.stages) {
            log << " | alone:";
            for (int i = 0; i < 6; ++i) log << " " << char('A' + i) << " " << fmt(row.alone_us[i]);
        }
        log << "\n";
        run.rows.push_back(row);
    }
    return run;
}

// ---------------------------------------------------------------------------------------------
// Check mode.

std::string CheckCase::str() const {
    return "R=" + std::to_string(R) + " L=" + std::to_string(L) + " nb=" + std::to_string(nb) +
           (block_write ? " block-write" : "") + (ds_layout ? " ds" : " sd") +
           (null_requests ? " null=" + std::to_string(null_requests) : "") + " seed=" + std::to_string(seed);
}

std::vector<CheckCase> default_check_cases() {
    return {
        {1, 1, 1, false, false, 0, 1},   // plain decode
        {2, 4, 4, true, false, 1, 2},    // the main job's shape, one null request
        {3, 5, 8, false, true, 1, 3},    // nb = 8, ds layout
        {8, 8, 7, true, false, 2, 4},    // S = 64 at L = 8
        {64, 1, 4, false, true, 8, 5},   // S = 64 at L = 1
        {16, 2, 2, false, false, 0, 6},  // S = 32
    };
}

namespace {

struct Rule {
    enum Kind { exact, stage, state } kind;
    double min_identical = 1.0, max_row_ulp = 0, max_rel_l2 = 0;
    std::string note = "";
    std::string str() const {
        if (kind == exact) return "bit-exact";
        if (kind == state) return "rel-L2 <= " + fmt(max_rel_l2 * 1e6, 1) + "e-6";
        return (min_identical > 0 ? ">= " + fmt(min_identical * 100, 3) + "% identical" + note + ", " : std::string()) +
               "<= " + fmt(max_row_ulp, 0) + " ulp at row scale";
    }
    bool pass(const TensorDiff& d) const {
        if (d.nan_mismatch) return false;
        if (kind == exact) return d.frac_identical == 1.0;
        if (kind == state) return d.rel_l2 <= max_rel_l2;
        return d.frac_identical >= min_identical && d.max_row_ulp <= max_row_ulp;
    }
};
const Rule kExact{Rule::exact};
const Rule kStage{Rule::stage, 0.999, 1.0};       // SPEC §5, most stages
const Rule kGemm{Rule::stage, 0.995, 1.0};        // SPEC §5: an in_proj through tensor cores
const Rule kElementwise{Rule::stage, 0.9999, 1.0};  // elementwise but for expf's last bit
const Rule kState{Rule::state, 0, 0, 1e-6};

Tensor bf_tensor(std::vector<int64_t> shape, const std::vector<bf16>& v) { return Tensor::of(DType::BF16, std::move(shape), v); }
Tensor f32_tensor(std::vector<int64_t> shape, const std::vector<float>& v) { return Tensor::of(DType::F32, std::move(shape), v); }

const std::set<std::string> kPlantable{"x", "proj", "prefix_out", "o", "conv_state", "ssm_state", "core_out"};

void plant_bug(const std::string& what, const StepInputs& in, StepOutputs<float>& g) {
    const Config& c = in.cfg;
    auto bump = [](std::vector<bf16>& v, size_t every) {
        for (size_t i = 0; i < v.size(); i += every) v[i].bits = uint16_t(v[i].bits ^ 1u);
    };
    if (what == "x") bump(g.x, 50);
    else if (what == "proj") bump(g.proj, 50);
    else if (what == "core_out") bump(g.core_out, 100);
    else if (what == "prefix_out") g.prefix_out[7].bits ^= 1u;
    else if (what == "o") {
        // a live request's whole row off by far more than an ulp
        for (int r = 0; r < c.R; ++r)
            if (in.idx(r, in.num_accepted[size_t(r)] - 1) > 0) {
                for (int e = 0; e < c.E(); ++e) g.o[size_t(r * c.L) * c.E() + e] = bf16::round(g.o[size_t(r * c.L) * c.E() + e].to_float() * 1.5f);
                break;
            }
    } else if (what == "conv_state") {
        for (int r = 0; r < c.R; ++r)
            if (in.idx(r, 0) > 0) { g.conv_state[size_t(in.conv_at(in.idx(r, 0), c.W - 2, 0))].bits ^= 1u; break; }
    } else if (what == "ssm_state") {
        g.ssm_state[size_t(in.ssm_at(c.slots - 1, 0, 0, 0))] += 1.0f;  // an untouched extra slot
    } else {
        bad_input("--plant: unknown tensor '" + what + "' (x, proj, prefix_out, conv_state, o, core_out, ssm_state)");
    }
}

}  // namespace

StepOutputs<float> run_unfused(const StepInputs& in) {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) bad_input("no CUDA device found");
    const Config& c = in.cfg;
    Stream stream;
    DeviceStepSet set(c, SetCapacity{c.S(), c.R, c.slots, c.conv_len()});
    set.upload(in);
    UnfusedPath up(c);
    up.enqueue(set.ptrs(), stream.get());
    MONOKDA_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    return set.download(c);
}

int run_unfused_check(const std::vector<CheckCase>& cases, const std::string& plant, std::ostream& report,
                      std::ostream& log) {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) bad_input("no CUDA device found");
    cudaDeviceProp prop;
    MONOKDA_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    if (!plant.empty() && !kPlantable.count(plant))  // a bad name fails before any work
        bad_input("--plant: unknown tensor '" + plant + "' (x, proj, prefix_out, conv_state, o, core_out, ssm_state)");
    report << "# Unfused GPU chain (bench/unfused_path.cu) against the reference\n\n"
           << "- device: " << prop.name << "\n- date: " << utc_now() << "\n- written by: " << version_line() << "\n"
           << (plant.empty() ? "" : "- PLANTED BUG in '" + plant + "' (this run must fail)\n")
           << "- teacher forcing (SPEC §5): each reference stage is fed the GPU chain's own hand-offs; "
              "A is fed the fixture.\n\n"
           << "| case | stage | tensor | identical % | max row ulp | max ulp | rel-L2 | rule | verdict |\n"
           << "|---|---|---|---|---|---|---|---|---|\n";
    int failures = 0;
    Stream stream;
    const cudaStream_t st = stream.get();
    for (const CheckCase& cc : cases) {
        Config cfg = Config::preset("k3");
        cfg.R = cc.R;
        cfg.L = cc.L;
        cfg.nb = cc.nb;
        cfg.block_write = cc.block_write;
        cfg.conv_layout = cc.ds_layout ? ConvLayout::ds : ConvLayout::sd;
        cfg.seed = cc.seed;
        FixtureOptions fo;
        fo.null_requests = cc.null_requests;
        const auto t0 = std::chrono::steady_clock::now();
        StepInputs in = make_fixture(cfg, fo);
        const Config& c = in.cfg;
        const int64_t S = c.S(), D = c.D, E = c.E();
        DeviceStepSet set(c, SetCapacity{c.S(), c.R, c.slots, c.conv_len()});
        set.upload(in);
        UnfusedPath up(c);
        const StepPtrs p = set.ptrs();
        up.enqueue(p, st);
        MONOKDA_CUDA_CHECK(cudaStreamSynchronize(st));
        StepOutputs<float> g = set.download(c);

        // every cuBLASLt candidate the benchmark may pick, on the same inputs (C first: B overwrites proj)
        std::vector<std::pair<std::string, std::vector<bf16>>> gemm_c, gemm_b;
        for (int i = 0; i < up.f_b().candidates(); ++i) {
            up.run_f_b_candidate(i, p, st);
            MONOKDA_CUDA_CHECK(cudaStreamSynchronize(st));
            gemm_c.emplace_back(up.f_b().describe(i), set.download_g1(c));
        }
        for (int i = 0; i < up.in_proj().candidates(); ++i) {
            up.run_in_proj_candidate(i, p, st);
            MONOKDA_CUDA_CHECK(cudaStreamSynchronize(st));
            gemm_b.emplace_back(up.in_proj().describe(i), set.download_proj(c));
        }

        if (!plant.empty()) plant_bug(plant, in, g);

        // reference: A on the fixture, B..F teacher-forced on the chain's own hand-offs
        const ReductionOrder ord;
        const StepOutputs<float> tf = ref::teacher_forced<float>(in, ord, g);
        // x sums 7168 terms three times over, and the sequential f32 reference carries that order's
        // rounding: on the H200 it is 99.81-99.89 % identical to the f64 oracle, while tree-order
        // sums are 99.99 %. So x is held to the oracle: at least as many bits as the f32 reference
        // gets right (and <= 1 ulp at row scale from the reference, below).
        std::vector<bf16> o_prefix, o_blocks, o_x;
        ref::attnres<double>(in, ord, o_prefix, o_blocks, o_x);
        const double ref_vs_oracle = diff_tensors("x", bf_tensor({S, D}, tf.x), bf_tensor({S, D}, o_x)).frac_identical;
        const Rule x_rule{Rule::stage, ref_vs_oracle, 1.0, 0, " of the f64 oracle's x (the f32 reference's own agreement)"};
        const StepOutputs<float> e2e = ref::run<float>(in, ord);

        auto row = [&](const std::string& stage, const std::string& name, const Tensor& a, const Tensor& b, const Rule& rule) {
            const TensorDiff d = diff_tensors(name, a, b);
            const bool ok = rule.pass(d);
            failures += ok ? 0 : 1;
            report << "| " << cc.str() << " | " << stage << " | " << name << " | " << fmt(d.frac_identical * 100, 4) << " | "
                   << fmt(d.max_row_ulp, 2) << " | " << d.max_ulp << " | " << d.rel_l2 << " | " << rule.str() << " | "
                   << (ok ? "pass" : "FAIL") << " |\n";
            if (!ok) log << "FAIL " << cc.str() << " " << stage << " " << name << " (" << rule.str() << ")\n";
        };
        auto flag = [&](const std::string& stage, const std::string& what, bool ok) {
            failures += ok ? 0 : 1;
            report << "| " << cc.str() << " | " << stage << " | " << what << " | | | | | exact | " << (ok ? "pass" : "FAIL") << " |\n";
            if (!ok) log << "FAIL " << cc.str() << " " << stage << " " << what << "\n";
        };

        row("A", "prefix_out", bf_tensor({S, D}, g.prefix_out), bf_tensor({S, D}, tf.prefix_out), kExact);
        row("A", "blocks", bf_tensor({S, 8, D}, g.blocks), bf_tensor({S, 8, D}, tf.blocks), kExact);
        row("A", "x vs f64 oracle", bf_tensor({S, D}, g.x), bf_tensor({S, D}, o_x), x_rule);
        row("A", "x", bf_tensor({S, D}, g.x), bf_tensor({S, D}, tf.x), Rule{Rule::stage, 0.0, 1.0});
        row("B", "proj", bf_tensor({S, c.N}, g.proj), bf_tensor({S, c.N}, tf.proj), kGemm);
        row("C", "g1", bf_tensor({S, E}, g.g1), bf_tensor({S, E}, tf.g1), kStage);
        row("D", "qkv", bf_tensor({S, c.C}, g.qkv), bf_tensor({S, c.C}, tf.qkv), kElementwise);
        row("D", "conv_state", bf_tensor(c.conv_state_shape(), g.conv_state), bf_tensor(c.conv_state_shape(), tf.conv_state), kExact);
        row("E", "o", bf_tensor({S, E}, g.o), bf_tensor({S, E}, tf.o), kStage);
        const std::vector<int64_t> ssm_shape{c.slots, c.H, c.V, c.K};
        row("E", "ssm_state", f32_tensor(ssm_shape, g.ssm_state), f32_tensor(ssm_shape, tf.ssm_state), kState);
        row("F", "core_out", bf_tensor({S, E}, g.core_out), bf_tensor({S, E}, tf.core_out), kElementwise);

        // null requests and untouched slots, exactly
        std::set<int32_t> written;
        bool null_o_zero = true;
        for (int r = 0; r < c.R; ++r) {
            const bool live = in.idx(r, in.num_accepted[size_t(r)] - 1) > 0;
            for (int t = 0; t < c.L; ++t) {
                if (live && in.idx(r, t) > 0) written.insert(in.idx(r, t));
                if (!live)
                    for (int e = 0; e < E; ++e) null_o_zero &= g.o[size_t((r * c.L + t) * E + e)].bits == 0;
            }
        }
        const size_t state_elems = size_t(c.H) * c.V * c.K;
        bool untouched = true;
        for (int s = 0; s < c.slots; ++s)
            if (!written.count(s))
                untouched &= memcmp(&g.ssm_state[size_t(s) * state_elems], &in.ssm_state[size_t(s) * state_elems],
                                    state_elems * sizeof(float)) == 0;
        flag("E", "o = +0 for requests without an initial state", null_o_zero);
        flag("E", "ssm_state slots not written are untouched", untouched);

        for (const auto& [name, g1] : gemm_c) row("C cand.", "g1 " + name, bf_tensor({S, E}, g1), bf_tensor({S, E}, tf.g1), kStage);
        for (const auto& [name, pj] : gemm_b) row("B cand.", "proj " + name, bf_tensor({S, c.N}, pj), bf_tensor({S, c.N}, tf.proj), kGemm);

        // the f32 reference against the f64 oracle: the bar x is held to above
        {
            const TensorDiff dx = diff_tensors("x", bf_tensor({S, D}, tf.x), bf_tensor({S, D}, o_x));
            report << "| " << cc.str() << " | A (f32 reference) | x vs f64 oracle | " << fmt(dx.frac_identical * 100, 4) << " | "
                   << fmt(dx.max_row_ulp, 2) << " | " << dx.max_ulp << " | " << dx.rel_l2 << " | | info |\n";
        }
        // end to end, for information: how far the chain's reordered sums carry
        const TensorDiff ec = diff_tensors("core_out", bf_tensor({S, E}, g.core_out), bf_tensor({S, E}, e2e.core_out));
        const TensorDiff es = diff_tensors("ssm_state", f32_tensor(ssm_shape, g.ssm_state), f32_tensor(ssm_shape, e2e.ssm_state));
        report << "| " << cc.str() << " | end to end | core_out | " << fmt(ec.frac_identical * 100, 4) << " | "
               << fmt(ec.max_row_ulp, 2) << " | " << ec.max_ulp << " | " << ec.rel_l2 << " | cosine " << fmt(ec.cosine, 7)
               << " | info |\n"
               << "| " << cc.str() << " | end to end | ssm_state | " << fmt(es.frac_identical * 100, 4) << " | | "
               << es.max_ulp << " | " << es.rel_l2 << " | | info |\n";
        log << cc.str() << ": checked in "
            << fmt(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1) << " s\n";
    }
    report << "\n" << (failures ? "checks FAILED: " + std::to_string(failures) : std::string("all checks passed")) << "\n";
    log << (failures ? "checks FAILED: " + std::to_string(failures) : std::string("all checks passed")) << "\n";
    return failures ? 1 : 0;
}

}  // namespace monokda::bench
