// `monokda bench` on the GPU: the graph-replay timing of the fused kernel, the unfused chain and the
// floor (bench/gpu_bench.hpp); the unfused chain's outputs and its check against the reference are
// bench/unfused_check.cu's.
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


// The run's description: the device, the commit, the command and the replay settings.
PerfRun run_header(const GpuBenchOptions& opt, const cudaDeviceProp& prop) {
    PerfRun run;
    run.device = prop.name;
    run.commit = opt.commit.empty() ? "unknown" : opt.commit;
    run.date = utc_now();
    run.command = opt.command;
    run.sets = opt.sets;
    run.l2_bytes = prop.l2CacheSize;
    run.reps = opt.reps;
    run.steps_per_graph = opt.sets * opt.steps_per_set;
    return run;
}

// The fused kernel's adapter, or null (not built, or --no-fused), with run.fused_status saying which.
std::unique_ptr<FusedStep> open_fused(const GpuBenchOptions& opt, PerfRun& run, std::ostream& log) {
    std::string why;
    std::unique_ptr<FusedStep> fused = opt.fused ? make_fused_step(opt.fused_choices, why) : nullptr;
    if (!opt.fused) why = "not measured (--no-fused)";
    const bool chosen = !opt.fused_choices.is_production();
    run.fused_status = !fused ? why
                       : chosen ? "kernels/ launcher, one cooperative launch a step, no hand-off export, NOT the production "
                                  "choices: see the command"
                                : "kernels/ launcher with its default options (one cooperative launch a step, no hand-off export)";
    log << "fused kernel: " << run.fused_status << "\n";
    return fused;
}

// One plain launch of the fused kernel at this shape before it is timed: a shape the kernel refuses
// or a launch that times out is recorded in run.fused_status and skipped (false), not timed (a
// timed-out poll would cost its timeout in every replay). A slow kernel gets fewer replays (at
// least 20), so that a measurement stays near 0.5 s: fused_reps.
bool fused_first_launch(FusedStep& fused, const Config& c, const std::vector<StepPtrs>& ptrs, cudaStream_t st, int reps,
                        int steps, int& fused_reps, PerfRun& run, std::ostream& log) {
    try {
        fused.prepare(c, ptrs);
        fused.enqueue(0, st);
        fused.check(st);
        cudaEvent_t e0, e1;
        MONOKDA_CUDA_CHECK(cudaEventCreate(&e0));
        MONOKDA_CUDA_CHECK(cudaEventCreate(&e1));
        MONOKDA_CUDA_CHECK(cudaEventRecord(e0, st));
        fused.enqueue(1, st);
        MONOKDA_CUDA_CHECK(cudaEventRecord(e1, st));
        fused.check(st);
        float ms = 0;
        MONOKDA_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        const double graph_s = double(ms) * 1e-3 * steps;
        fused_reps = std::max(std::min(reps, 20), std::min(reps, int(0.5 / graph_s)));
        return true;
    } catch (const std::exception& e) {
        cudaGetLastError();
        const std::string msg = "R=" + std::to_string(c.R) + " L=" + std::to_string(c.L) + ": " + e.what();
        log << "fused kernel refused or failed, not timed: " << msg << "\n";
        run.fused_status += "; not measured at " + msg;
        return false;
    }
}

// Where the fused kernel's time goes: its plan cut after the attn role, and after the gemv pass.
void time_fused_variants(FusedStep& fused, const Config& c, const std::vector<StepPtrs>& ptrs, cudaStream_t st, int nsets,
                         int steps, int fused_reps, PerfRow& row, std::ostream& log) {
    try {
        for (FusedVariant v : {FusedVariant::attn, FusedVariant::attn_gemv}) {
            fused.prepare(c, ptrs, v);
            fused.enqueue(0, st);  // one plain launch first, as for the full plan
            fused.check(st);
            const double t = time_graph(st, nsets, steps, fused_reps, [&](int set, cudaStream_t s) { fused.enqueue(set, s); }).median();
            fused.check(st);
            (v == FusedVariant::attn ? row.fused_attn_us : row.fused_attn_gemv_us) = t;
        }
    } catch (const std::exception& e) {
        cudaGetLastError();
        log << "fused plan variants at R=" << c.R << " L=" << c.L << " not measured: " << e.what() << "\n";
        row.fused_attn_us.reset();
        row.fused_attn_gemv_us.reset();
    }
}

// A shape's row before anything is timed: its floor (bytes, and time at the copy rate) and the
// unfused chain's bytes a stage.
PerfRow row_of(const Config& c, double copy_tb_s) {
    PerfRow row;
    row.R = c.R;
    row.L = c.L;
    row.S = c.S();
    row.nb = c.nb;
    row.block_write = c.block_write;
    const FloorBytes fb = step_floor_bytes(c);
    row.floor_bytes = fb.total();
    row.floor_us = double(fb.total()) / (copy_tb_s * 1e12) * 1e6;
    const StageBytes sb = unfused_stage_bytes(c);
    std::copy(std::begin(sb.stage), std::end(sb.stage), row.stage_bytes);
    return row;
}

// A shape's line in the log (fewer_reps: the fused kernel got fewer replays than asked).
void log_row(std::ostream& log, const PerfRow& row, bool fewer_reps, bool stages) {
    log << "R=" << row.R << " L=" << row.L << " S=" << row.S << " nb=" << row.nb << ": floor " << fmt(row.floor_us) << " us"
        << (fewer_reps ? " (fused: " + std::to_string(row.fused_reps) + " replays)" : "")
        << ", fused " << (row.fused_us ? fmt(*row.fused_us) + " us (" + fmt(*row.fused_us / row.floor_us, 2) + "x floor)" : "not measured")
        << ", unfused " << fmt(row.unfused_us) << " us"
        << (row.fused_us ? " (" + fmt(row.unfused_us / *row.fused_us, 2) + "x fused)" : "");
    if (row.fused_attn_us && row.fused_attn_gemv_us)
        log << " | fused attn only " << fmt(*row.fused_attn_us) << ", attn+gemv " << fmt(*row.fused_attn_gemv_us);
    if (stages) {
        log << " | alone:";
        for (int i = 0; i < 6; ++i) log << " " << char('A' + i) << " " << fmt(row.alone_us[i]);
    }
    log << "\n";
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
    PerfRun run = run_header(opt, prop);

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

    std::unique_ptr<FusedStep> fused = open_fused(opt, run, log);

    const int steps = run.steps_per_graph;
    const int stage_reps = std::max(5, opt.reps / 2);
    std::map<int, std::pair<int, int>> tuned;  // S -> chosen (B, C) candidates

    for (const auto& [R, L] : shapes) {
        const Config c = step_config(R, L);
        for (int i = 0; i < opt.sets; ++i) sets[size_t(i)]->set_step(c, 1000 + uint64_t(i));
        MONOKDA_CUDA_CHECK(cudaDeviceSynchronize());

        PerfRow row = row_of(c, bw.copy_tb_s);

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
        const bool fused_ok = fused && fused_first_launch(*fused, c, ptrs, st, opt.reps, steps, fused_reps, run, log);
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
        if (fused_ok && opt.stages && R <= 2) time_fused_variants(*fused, c, ptrs, st, opt.sets, steps, fused_reps, row, log);
        if (fused_ok) {
            row.fused_us = fu.median();
            row.fused_reps = fused_reps;
            row.fused_p10 = fu.pct(0.1);
            row.fused_p90 = fu.pct(0.9);
        }
        log_row(log, row, fused_ok && fused_reps != opt.reps, opt.stages);
        run.rows.push_back(row);
    }
    return run;
}

}  // namespace monokda::bench
