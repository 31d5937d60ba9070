// monokda-v2-inproj-probe: kernel v2's in_proj on its own, at the footprint the kernel will have, to
// decide whether the design holds before the kernel is built (docs/kernel-v2.md).
//
// The design: 15 clusters of 8 CTAs (one CTA an SM, cooperative). Rank r of a cluster owns columns
// 896r .. 896r + 895 of D (its K-slice of x stays in shared memory). A cluster produces in_proj rows
// in units of four 16-row tiles, dealt by the plan (core/plan_v2.hpp, one a ring setting and S:
// v2_inproj_tables.cuh), whose flat table the kernel reads. Each CTA streams its slices of its
// cluster's units as one contiguous byte run, packed by the plan in the matrix unit's A-fragment
// order, through the copy engine (1-D bulk copies) into a ring of `stages` chunks from the
// launch's first instant (a chunk: KQ k-steps of a unit, all its tiles); it never waits for x, and
// keeps at most `inflight` copies outstanding whatever the ring's depth, so that a deep ring buffers a
// late x without putting more bytes in flight. Eight consumer warps (m-tile, k parity) take each
// chunk: the warp's x fragments of the chunk are loaded before its wait, its weight tiles right after,
// and with `early_free` the slot is freed before the products. The two warps of an m-tile take the
// even and the odd k-steps, summed in that order through shared memory; at a unit's end the even warp
// sends its fp32 partials to the rows' owner CTA (8 rows a rank) with st.async, counted on the owner's
// mbarrier; the owner's reducer warp sums the 8 ranks in rank order, rounds once (#3), stores proj,
// and frees the receive slot on every rank. So proj is deterministic and independent of S (every
// column's sum runs the same way whatever the other columns).
//
// Modes:
//   rate     stream only (consumers touch and free each chunk, or read their tiles of it without
//            math): the copy rate and the SM clock against chunk size and depth, on the 15×8 clusters.
//   tune     in_proj at S = 1, 4, 16, 64 over chunk, depth, in-flight cap, the waits, early free:
//            launch-to-last-proj time, a line a setting, then the best setting of each S.
//   inproj   the first design's setting against the best of tune, at each S.
//   delay    inproj at S = 1 and 16 with x made late by 0..6 µs: how much of a late x the ring hides.
//   trace    one launch's unit and chunk timelines at S = 1 and 16, and S = 1's ring streaming alone
//            (copy issued, chunk seen, each consumer's see and free, the slot refilled).
//   check    proj against an fp32 host reference in sequential order (the reference path's), bit
//            identity (teacher-forced: the same bf16 x), and the same rows bit for bit at every S.
//   residency  cooperative launches of clusters of 1, 2, 4, 8, 16 at this footprint: how many fit.
//   ab       the best setting of S = 1 and 16 against itself with one knob changed (tables in global
//            memory, products replaced by adds, no partials sent (also with adds, without the ldmatrix
//            of x, and that on only 1 or 8 clusters or 1 or 2 of the 8 warps), the stream alone (also
//            with tile reads, and with x staged), the waits polled or sleeping, slots freed late or
//            early, copies issued before the entry barrier or not), twice, interleaved.
//   seam     x computed in the clusters beside the stream (v2_seam.cuh): x bit for bit the reference's in
//            kernel v1's order on every cluster, prefix_out exact, proj from it; x's ready time and the
//            step's end against x loaded, at S = 1, 4, 16; each stage's values against the host's.
//   seamcheck  seam's checks alone, without the timing (for compute-sanitizer).
//   heads    when the rows of f_a and beta, of each head's q, k, v, and of g are done (the units are
//            dealt in head order), at S = 1, 4, 16, x loaded and from the seam.
//   tailhop  those rows published as tagged words and polled by the cluster of each head's tasks
//            (v2_tail_hop.cuh), polled back to back or with a sleep a round, or each rank polling its
//            share and forwarding it to its cluster (the shared poll): when the last rank that needs a
//            group sees it, the words (and the shares assembled) against proj, and in_proj's end with
//            the hop, with the words published but not polled, and without, interleaved.
//   fused    in_proj and the plan's tail in one launch (x loaded; the reducer's PUBLISH after each
//            REDUCE, the tasks on the 2 spare warps): the tail's outputs bit for bit the reference's
//            from the kernel's own proj; the last proj, the last core_out and the launch, against
//            in_proj alone, at 1 x 1, 1 x 4, 2 x 4 and 4 x 4.
// Usage: monokda-v2-inproj-probe [residency|rate|tune|inproj|ab|delay|trace|check|seam|seamcheck|heads|tailhop|fused|all] [REPS]
#include "bench/probes/probe_util.hpp"
#include "bench/probes/v2_inproj_kernel.cuh"
#include "bench/probes/v2_inproj_tables.cuh"
#include "bench/probes/v2_seam_host.hpp"
#include "bench/probes/v2_tail_device.cuh"

#include <algorithm>
#include <iterator>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

namespace probe = monokda::probe;
using probe::median;
using namespace monokda::gpu;
using namespace monokda::probe::v2;
using monokda::PlanV2;
namespace v2tail = monokda::probe::v2tail;

void check(cudaError_t e, const char* what) { probe::check("monokda-v2-inproj-probe", e, what); }

// For the residency question: a kernel of the same footprint, cluster size chosen at launch.
__global__ void __launch_bounds__(kThreads, 1) footprint(int* out) {
    extern __shared__ __align__(1024) unsigned char smem[];
    if (threadIdx.x == 0) smem[0] = 1, out[blockIdx.x] = int(sm_id());
}

// ---- host ----

using Kernel = void (*)(Args);
constexpr int kKq8 = 8, kKq14 = 14;  // 16 KB and 28 KB slots
int nt_for(int S) { return S <= 8 ? 1 : S <= 16 ? 2 : S <= 64 ? 8 : 0; }
Kernel kernel_for(int kq, int nt) {
    if (kq == kKq8) return nt == 1 ? inproj<8, 1> : nt == 2 ? inproj<8, 2> : nt == 8 ? inproj<8, 8> : nullptr;
    if (kq == kKq14) return nt == 1 ? inproj<14, 1> : nt == 2 ? inproj<14, 2> : nullptr;  // 14 × 8 fragments: too many registers
    return nullptr;
}

struct Device {
    std::vector<uint16_t> w, x;
    std::map<PlanKey, PlanTables> plans;  // by S and ring setting
    std::vector<int32_t> packed_runs;     // the runs of the plan that packed the weight (bytes)
    unsigned char* d_w = nullptr;  // kCopies packed copies
    size_t packed_bytes = 0;
    uint16_t *d_x, *d_proj;
    unsigned long long* d_stamps;
    uint32_t* d_tagged;      // [64][N]: the tail's tagged words, never cleared (tailhop)
    uint32_t last_tag = 0;   // the last launch's tag: 1 .. 65535, a new one each launch
    uint32_t* d_assembled;   // [kTailHeads * kRanks][kShareMaxS][kAssembledRows]: tails 6 and 7's assembled rows (tailhop)
};

Device setup() {
    Device d;
    Rng rng{0x9e3779b97f4a7c15ull};
    d.w.resize(size_t(N) * D);
    for (auto& v : d.w) v = to_bf16(rng.uniform() * 0.03f);
    for (int r = 6284; r < N; ++r)  // the four zero pad rows
        std::fill(d.w.begin() + size_t(r) * D, d.w.begin() + size_t(r + 1) * D, uint16_t(0));
    d.x.resize(size_t(64) * D);
    for (auto& v : d.x) v = to_bf16(rng.normalish());
    const PlanV2& packer = tables_for(d.plans, {1, kKq14, 3, 3, 4}, nt_for(1), {}).plan;  // the de-risking setting at S = 1
    const std::vector<uint16_t> packed = packer.pack_weight(d.w);
    d.packed_runs = packer.run_offset;
    d.packed_bytes = packed.size() * 2;
    check(cudaMalloc(&d.d_w, d.packed_bytes * kCopies), "weight");
    for (int k = 0; k < kCopies; ++k)
        check(cudaMemcpy(d.d_w + k * d.packed_bytes, packed.data(), d.packed_bytes, cudaMemcpyHostToDevice), "weight copy");
    check(cudaMalloc(&d.d_x, d.x.size() * 2), "x");
    check(cudaMemcpy(d.d_x, d.x.data(), d.x.size() * 2, cudaMemcpyHostToDevice), "x copy");
    check(cudaMalloc(&d.d_proj, size_t(64) * N * 2), "proj");
    check(cudaMalloc(&d.d_stamps, size_t(kCtas) * kStamps * 8), "stamps");
    check(cudaMalloc(&d.d_tagged, size_t(64) * N * 4), "tagged");
    check(cudaMemset(d.d_tagged, 0, size_t(64) * N * 4), "tagged clear");  // tag 0: no step's
    const size_t assembled = size_t(kTailHeads) * kRanks * kShareMaxS * kAssembledRows * 4;
    check(cudaMalloc(&d.d_assembled, assembled), "assembled");
    check(cudaMemset(d.d_assembled, 0, assembled), "assembled clear");
    for (int kq : {kKq8, kKq14})
        for (int nt : {1, 2, 8})
            if (Kernel k = kernel_for(kq, nt))
                check(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax - 4096), "smem attr");
    return d;
}

struct Case {  // one launch configuration
    int S, kq, stages, slots;
    int inflight, early, early_free;  // inflight 0: the ring's depth
    int compute = 1, entry_release = 0, param_tables = 1, products = 1, poll = 0, xfrag = 1, fp_clusters = 0, fp_warps = 0;
    unsigned long long delay_ns = 0;
    int seam = 0;  // x from the seam (g_seam's inputs) instead of loaded from d.x
    int tail = 0;  // proj published as tagged words and polled by the head clusters (tailhop; Args::tail)
    int free_first = 0;  // the reducer frees a slot before its stores (tailhop)
    int tail_R = 0;      // tail kTailPlan: the step's requests (S / tail_R tokens each; the fused mode)
    int tail_idle = 0;   // tail kTailPlan: the reducers' PUBLISH alone, no task steps (Args::tail_idle)
    int cap() const { return inflight ? std::min(inflight, stages) : stages; }
    int chunk() const { return kq * 4 * kTileBytes; }
};

SeamArgs g_seam{};  // the seam's device inputs (seam mode sets them)
v2tail::Device* g_tail = nullptr;  // the plan's tail's buffers (the fused mode sets them, for its R x L)

// Dynamic shared memory of a case: in_proj's layout, then the seam's, then tails 6 and 7's shares (the kernel's share_at).
int smem_bytes(const Case& c) {
    const int base = Smem::layout(nt_for(c.S), c.chunk(), c.stages, c.slots).bytes;
    const int end = c.seam ? SeamSmem::layout(base, c.S, g_seam.nb).bytes : base;
    if (c.tail == kTailPlan) return monokda::V2TailLayout::make(end, g_tail->a.dims).bytes;
    return shared_poll(c.tail) ? share_offset(end) + share_bytes(c.S) : end;
}

// The plan of a case: its S and ring setting (built, held and uploaded on first use).
const PlanTables& tables(Device& d, const Case& c) {
    return tables_for(d.plans, {c.S, c.kq, c.stages, c.cap(), c.slots, c.seam ? g_seam.nb : 0, c.tail == kTailPlan ? c.tail_R : 0}, nt_for(c.S),
                      d.packed_runs);
}

Args args_for(Device& d, const Case& c, int copy) {
    Args a{};
    a.w = d.d_w + size_t(copy) * d.packed_bytes, a.x = d.d_x, a.proj = d.d_proj, a.stamps = d.d_stamps;
    fill_plan_args(a, tables(d, c));
    a.S = c.S, a.early = c.early, a.early_free = c.early_free;  // the ring's depth, cap and receive slots: the plan's
    a.entry_release = c.entry_release, a.compute = c.compute, a.param_tables = c.param_tables, a.products = c.products, a.poll = c.poll, a.xfrag = c.xfrag, a.fp_clusters = c.fp_clusters, a.fp_warps = c.fp_warps;
    a.x_delay_ns = c.delay_ns;
    a.seam = c.seam, a.sa = g_seam;
    d.last_tag = d.last_tag % 65535 + 1;
    a.tail = c.tail, a.tagged = d.d_tagged, a.tag = d.last_tag, a.free_first = c.free_first, a.assembled = d.d_assembled;
    a.tail_idle = c.tail_idle;
    if (c.tail == kTailPlan) {  // the tail reads this launch's proj and words, from the same table
        a.ta = g_tail->a;
        a.ta.plan = a.plan, a.ta.proj = d.d_proj, a.ta.words = d.d_tagged, a.ta.tag = a.tag, a.ta.team_warps = kTailTeam / 32;
        check(cudaMemset(a.ta.stamps, 0, size_t(kCtas) * v2tail::kStamps * 8), "tail stamps clear");
        check(cudaMemset(a.ta.error, 0, 16), "tail error clear");
    }
    return a;
}

struct Run {
    float event_us;   // median launch time by events
    float span_us;    // median of (last exit − first entry)
    float proj_us;    // median of (last proj stored − first entry)
    float byte1_us;   // median of (the first chunk a consumer saw, anywhere − first entry)
    float issue1_us;  // median of (the first copy issued, anywhere − first entry)
    float last_us;    // median of (the last CTA's last chunk seen − first entry)
    float skew_us;    // median of (last entry − first entry)
    float sync_us;    // median of (last CTA past the first cluster barrier − first entry)
    float chunk1_us;  // median of (the last CTA's first chunk − first entry)
    float bytes_tbs;  // packed bytes / span
    float mhz;        // median SM clock over the launch (CTA 0's cycles / its time)
    float mhz_last;   // the same for the last CTA (cluster 14)
    float x_us;       // median of (the last CTA's x in shared memory − first entry)
    bool ok;
};

bool fits(const Case& c) {
    return kernel_for(c.kq, nt_for(c.S)) && c.stages <= kMaxStages && c.slots <= kMaxSlots && c.early <= c.cap() &&
           (!c.seam || c.S <= kSeamMaxS) && (!shared_poll(c.tail) || c.S <= kShareMaxS) &&
           (c.tail != kTailPlan || nt_for(c.S) <= kTailMaxNt) && smem_bytes(c) <= kSmemMax - 4096;
}

// each: called after every timed launch (its stamps downloaded), with the launch's tag
Run run(Device& d, const Case& c, int reps, const std::function<void(uint32_t)>& each = {}) {
    Run out{};
    if (!fits(c)) return out;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(kCtas), cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = size_t(smem_bytes(c));
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative, attr[0].val.cooperative = 1;
    cfg.attrs = attr, cfg.numAttrs = 1;
    cudaEvent_t e0, e1;
    check(cudaEventCreate(&e0), "event"), check(cudaEventCreate(&e1), "event");
    std::vector<float> ev, span, proj, byte1, issue1, last, skew, sync, first, mhz, mhz_last, xr;
    std::vector<unsigned long long> h(size_t(kCtas) * kStamps);
    const Kernel kernel = kernel_for(c.kq, nt_for(c.S));
    for (int i = 0; i < reps + 2; ++i) {
        const Args a = args_for(d, c, i % kCopies);
        check(cudaMemset(d.d_stamps, 0, h.size() * 8), "stamps clear");
        check(cudaEventRecord(e0), "record");
        check(cudaLaunchKernelEx(&cfg, kernel, a), "launch");
        check(cudaEventRecord(e1), "record");
        check(cudaEventSynchronize(e1), "sync");
        check(cudaGetLastError(), "kernel");
        if (i < 2) continue;  // warm-up
        float ms;
        check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
        check(cudaMemcpy(h.data(), d.d_stamps, h.size() * 8, cudaMemcpyDeviceToHost), "stamps");
        unsigned long long t0 = ~0ull, t_last_in = 0, t_exit = 0, t_proj = 0, t_first = 0, t_byte1 = ~0ull, t_sync = 0;
        unsigned long long t_issue1 = ~0ull, t_last = 0, t_x = 0;
        for (int k = 0; k < kCtas; ++k) {
            const unsigned long long* s = &h[size_t(k) * kStamps];
            t0 = std::min(t0, s[kEntry]), t_last_in = std::max(t_last_in, s[kEntry]), t_exit = std::max(t_exit, s[kExit]);
            t_proj = std::max(t_proj, s[kLastProj]), t_first = std::max(t_first, s[kFirstChunk]);
            t_byte1 = std::min(t_byte1, s[kFirstChunk]), t_sync = std::max(t_sync, s[kSynced]);
            t_issue1 = std::min(t_issue1, s[kChunk0]), t_last = std::max(t_last, s[kLastChunk]);
            t_x = std::max(t_x, s[kXReady]);
        }
        auto us = [&](unsigned long long t) { return float(t - t0) / 1000.f; };
        ev.push_back(ms * 1000.f), span.push_back(us(t_exit)), proj.push_back(c.compute == 1 ? us(t_proj) : 0.f);
        byte1.push_back(us(t_byte1)), issue1.push_back(us(t_issue1)), last.push_back(us(t_last)), skew.push_back(us(t_last_in)), sync.push_back(us(t_sync)), first.push_back(us(t_first));
        xr.push_back(t_x ? us(t_x) : 0.f);
        mhz.push_back(float(h[kCycles]) / float(h[kExit] - h[kEntry]) * 1000.f);
        const unsigned long long* z = &h[size_t(kCtas - 1) * kStamps];
        mhz_last.push_back(float(z[kCycles]) / float(z[kExit] - z[kEntry]) * 1000.f);
        if (each) each(a.tag);
    }
    out.event_us = median(ev), out.span_us = median(span), out.proj_us = median(proj), out.chunk1_us = median(first);
    out.byte1_us = median(byte1), out.issue1_us = median(issue1), out.last_us = median(last), out.skew_us = median(skew), out.sync_us = median(sync), out.mhz = median(mhz), out.mhz_last = median(mhz_last);
    out.x_us = median(xr);
    out.bytes_tbs = float(d.packed_bytes) / (out.span_us * 1e-6f) / 1e12f;
    out.ok = true;
    check(cudaEventDestroy(e0), "event"), check(cudaEventDestroy(e1), "event");
    return out;
}

void print_row(const char* mode, const Case& c, const Run& r) {
    std::printf("%-6s S %2d  chunk %5d x %2d (%3d KB)  inflight %d  early %d  free %s  entry %s  tables %s  slots %d  delay %4llu ns",
                mode, c.S, c.chunk(), c.stages, c.chunk() * c.stages / 1024, c.cap(), c.early, c.early_free ? "early" : "late ",
                c.entry_release ? "rel" : "rlx", c.param_tables ? "param" : "gmem ", c.slots, c.delay_ns);
    std::printf("  poll %d  compute %d  fp clusters %d warps %d  x %s", c.poll, c.compute, c.fp_clusters, c.fp_warps,
                c.seam ? "seam  " : "loaded");
    if (!r.ok) {
        std::printf("  does not fit\n");
        return;
    }
    // from the first copy issued: to the last chunk seen (the stream) and to the last proj stored
    std::printf("  x ready %5.2f", r.x_us);
    std::printf("  event %5.1f  span %5.1f  proj %5.1f  from 1st copy: stream %5.1f proj %5.1f  synced %4.2f  1st copy %4.2f  "
                "1st chunk %4.2f/%4.2f us  %.2f TB/s  %4.0f MHz (last CTA %4.0f)\n",
                r.event_us, r.span_us, r.proj_us, r.last_us - r.issue1_us, r.proj_us - r.issue1_us, r.sync_us, r.issue1_us,
                r.byte1_us, r.chunk1_us, r.bytes_tbs, r.mhz, r.mhz_last);
}

// The ring's setting the de-risking record measured (28 KB x 3 at S <= 16, 16 KB x 3 at S = 64; no
// early issue, slots freed after the products, a release arrive at entry).
Case derisk_setting(int S) {
    Case c{S, S >= 64 ? kKq8 : kKq14, 3, S >= 64 ? 2 : 4, 0, 0, 0};
    c.entry_release = 1;
    return c;
}

// in_proj over the ring's settings at one S; prints a line each and returns the fastest (by proj).
Case tune(Device& d, int S, int reps) {
    Case best = derisk_setting(S);
    float best_us = 1e9f;
    for (int kq : {kKq8, kKq14})
        for (int stages : {3, 4, 5, 6, 7, 8, 10, 12})
            for (int inflight : {0, 3, 4, 5, 6})
                for (int poll : {0, 1})
                    for (int early_free : {0, 1}) {
                        Case c{S, kq, stages, S >= 64 ? 2 : 4, inflight, 0, early_free};
                        c.poll = poll;
                        if (inflight && inflight >= stages) continue;  // the same as 0
                        if (!fits(c) || c.cap() * c.chunk() > 160 * 1024 || c.cap() * c.chunk() < 48 * 1024) continue;
                        const Run r = run(d, c, reps);
                        print_row("tune", c, r);
                        if (r.ok && r.proj_us < best_us) best_us = r.proj_us, best = c;
                    }
    std::printf("tune S %d best: ", S);
    print_row("best", best, run(d, best, reps));
    return best;
}

// Cooperative launches of clusters of 1..16 at v2's footprint: how many clusters the occupancy query
// allows, and whether that many launch and one more is refused.
void residency() {
    int* d_out;
    check(cudaMalloc(&d_out, 1024 * 4), "out");
    check(cudaFuncSetAttribute(footprint, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax - 4096), "smem attr");
    check(cudaFuncSetAttribute(footprint, cudaFuncAttributeNonPortableClusterSizeAllowed, 1), "cluster 16");
    std::printf("residency at %d threads, %d B shared memory a CTA (cooperative, one CTA an SM):\n", kThreads, kSmemMax - 4096);
    for (int size : {1, 2, 4, 8, 16}) {
        cudaLaunchConfig_t cfg{};
        cfg.blockDim = dim3(kThreads), cfg.dynamicSmemBytes = size_t(kSmemMax - 4096);
        cudaLaunchAttribute attr[2];
        attr[0].id = cudaLaunchAttributeClusterDimension, attr[0].val.clusterDim.x = unsigned(size);
        attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
        attr[1].id = cudaLaunchAttributeCooperative, attr[1].val.cooperative = 1;
        cfg.attrs = attr, cfg.numAttrs = 2;
        cfg.gridDim = dim3(unsigned(size));
        int n = 0;
        check(cudaOccupancyMaxActiveClusters(&n, footprint, &cfg), "max active clusters");
        cfg.gridDim = dim3(unsigned(n * size));
        const cudaError_t fit = cudaLaunchKernelEx(&cfg, footprint, d_out);
        cudaDeviceSynchronize();
        cfg.gridDim = dim3(unsigned((n + 1) * size));
        const cudaError_t over = cudaLaunchKernelEx(&cfg, footprint, d_out);
        cudaDeviceSynchronize();
        cudaGetLastError();
        std::printf("  clusters of %2d: %3d clusters (%3d SMs) by the query; that many: %s; one more: %s\n", size, n, n * size,
                    cudaGetErrorString(fit), cudaGetErrorString(over));
    }
    check(cudaFree(d_out), "free");
}

// One launch's unit and chunk timelines on two ranks of cluster 0 (µs from the first entry).
void trace_mode(Device& d, const Case& c) {
    std::printf("trace S %d: ", c.S);
    print_row("trace", c, run(d, c, 3));
    const PlanV2& plan = tables(d, c).plan;
    auto tiles_of = [&](int cl) {  // the 16-row groups cluster cl streams
        int n = 0;
        for (int u = plan.cluster_first[size_t(cl)]; u < plan.cluster_first[size_t(cl) + 1]; ++u) n += plan.units[size_t(u)].tiles;
        return n;
    };
    std::vector<unsigned long long> h(size_t(kCtas) * kStamps);
    check(cudaMemcpy(h.data(), d.d_stamps, h.size() * 8, cudaMemcpyDeviceToHost), "stamps");
    unsigned long long t0 = ~0ull;
    for (int k = 0; k < kCtas; ++k) t0 = std::min(t0, h[size_t(k) * kStamps + kEntry]);
    auto us = [&](unsigned long long t) { return t ? double(t - t0) / 1000.0 : -1.0; };
    std::vector<double> wait;  // copy issued to chunk seen, every traced chunk of every CTA
    for (int k = 0; k < kCtas; ++k)
        for (int j = 0; j < kMaxTracedChunks; ++j) {
            const unsigned long long* t = &h[size_t(k) * kStamps + kChunk0 + 2 * j];
            if (t[0] && t[1]) wait.push_back(double(t[1] - t[0]) / 1000.0);
        }
    std::sort(wait.begin(), wait.end());
    if (!wait.empty())
        std::printf("trace: copy issued to chunk seen, %zu chunks: min %.2f median %.2f p90 %.2f max %.2f us\n", wait.size(),
                    wait.front(), wait[wait.size() / 2], wait[wait.size() * 9 / 10], wait.back());
    // every CTA's end by the rows its cluster streams (16-row groups): what the deal's imbalance costs
    for (int groups = 1; groups <= 40; ++groups) {
        std::vector<double> last_chunk, last_proj, first_seen;
        for (int k = 0; k < kCtas; ++k) {
            if (tiles_of(k / kRanks) != groups) continue;
            const unsigned long long* s = &h[size_t(k) * kStamps];
            last_chunk.push_back(us(s[kLastChunk])), first_seen.push_back(us(s[kFirstChunk]));
            if (s[kLastProj]) last_proj.push_back(us(s[kLastProj]));
        }
        if (last_chunk.empty()) continue;
        std::sort(last_chunk.begin(), last_chunk.end()), std::sort(last_proj.begin(), last_proj.end());
        std::sort(first_seen.begin(), first_seen.end());
        std::printf("trace: %3zu CTAs of %d groups: first chunk seen %.2f..%.2f  last chunk %.2f..%.2f (median %.2f)  "
                    "last proj %.2f..%.2f\n", last_chunk.size(), groups, first_seen.front(), first_seen.back(), last_chunk.front(),
                    last_chunk.back(), last_chunk[last_chunk.size() / 2], last_proj.empty() ? -1.0 : last_proj.front(),
                    last_proj.empty() ? -1.0 : last_proj.back());
    }
    // each cluster's last chunk (the latest of its ranks) over five more launches, and its SMs: does
    // the same cluster lag every time, and where does it sit
    std::vector<std::vector<double>> per(kClusters);
    std::vector<int> sm_lo(kClusters, 1 << 20), sm_hi(kClusters, -1);
    for (int rep = 0; rep < 5; ++rep) {
        run(d, c, 1);
        std::vector<unsigned long long> g(size_t(kCtas) * kStamps);
        check(cudaMemcpy(g.data(), d.d_stamps, g.size() * 8, cudaMemcpyDeviceToHost), "stamps");
        unsigned long long z = ~0ull;
        for (int k = 0; k < kCtas; ++k) z = std::min(z, g[size_t(k) * kStamps + kEntry]);
        for (int cl = 0; cl < kClusters; ++cl) {
            unsigned long long last = 0;
            for (int r = 0; r < kRanks; ++r) {
                const unsigned long long* s = &g[size_t(cl * kRanks + r) * kStamps];
                last = std::max(last, s[kLastChunk]);
                sm_lo[size_t(cl)] = std::min(sm_lo[size_t(cl)], int(s[kSm])), sm_hi[size_t(cl)] = std::max(sm_hi[size_t(cl)], int(s[kSm]));
            }
            per[size_t(cl)].push_back(double(last - z) / 1000.0);
        }
    }
    for (int cl = 0; cl < kClusters; ++cl) {
        const int groups = tiles_of(cl);
        std::printf("trace: cluster %2d (%d groups, SMs %3d..%3d): last chunk", cl, groups, sm_lo[size_t(cl)], sm_hi[size_t(cl)]);
        for (double v : per[size_t(cl)]) std::printf(" %6.2f", v);
        std::printf(" us\n");
    }
    for (int cta : {0, 7}) {
        const unsigned long long* s = &h[size_t(cta) * kStamps];
        std::printf("trace CTA %d: entry %.2f synced %.2f x %.2f first chunk %.2f last chunk %.2f last proj %.2f exit %.2f\n", cta,
                    us(s[kEntry]), us(s[kSynced]), us(s[kXReady]), us(s[kFirstChunk]), us(s[kLastChunk]), us(s[kLastProj]),
                    us(s[kExit]));
        for (int u = 0; u < kMaxTracedUnits; ++u) {
            const unsigned long long* t = s + kUnit0 + 4 * u;
            if (!t[0] && !t[2]) continue;
            std::printf("  unit %2d: k-steps done %7.2f  sent %7.2f  partials seen %7.2f  slot freed %7.2f\n", u, us(t[0]),
                        us(t[1]), us(t[2]), us(t[3]));
        }
        for (int j = 0; j < kMaxTracedChunks; ++j) {
            const unsigned long long* t = s + kChunk0 + 2 * j;
            if (!t[0]) continue;
            std::printf("  chunk %2d: issued %7.2f  seen %7.2f", j, us(t[0]), us(t[1]));
            if (j < kWarpChunks) {  // the eight consumers: first and last to see it, first and last to free it
                double see0 = 1e9, see1 = -1, free0 = 1e9, free1 = -1;
                int last = -1;
                for (int w = 0; w < 8; ++w) {
                    const unsigned long long* x = s + kWarp0 + 2 * (8 * j + w);
                    see0 = std::min(see0, us(x[0])), see1 = std::max(see1, us(x[0])), free0 = std::min(free0, us(x[1]));
                    if (us(x[1]) > free1) free1 = us(x[1]), last = w;
                }
                const unsigned long long* next = s + kChunk0 + 2 * (j + c.stages);  // the slot's next copy
                std::printf("  warps see %7.2f..%7.2f  free %7.2f..%7.2f (last: warp %d)  slot refilled %7.2f", see0, see1, free0,
                            free1, last, j + c.stages < kMaxTracedChunks && next[0] ? us(next[0]) : -1.0);
            }
            std::printf("\n");
        }
    }
}

#include "bench/probes/v2_check_mode.cuh"  // check_mode, on the harness above
#include "bench/probes/v2_seam_mode.cuh"   // seam_mode, on the harness above
#include "bench/probes/v2_heads_mode.cuh"  // heads_mode, on both
#include "bench/probes/v2_tailhop_mode.cuh"  // tailhop_mode, on heads mode's times
#include "bench/probes/v2_fused_mode.cuh"    // fused_mode, on the harness and the tail's buffers

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "all";
    const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
    static const char* const kModes[] = {"residency", "rate", "tune",      "inproj", "ab",      "delay", "trace",
                                         "check",     "seam", "seamcheck", "heads",  "tailhop", "fused", "all"};
    if (std::none_of(std::begin(kModes), std::end(kModes), [&](const char* m) { return mode == m; }) || reps < 1 || argc > 3) {
        std::fprintf(stderr, "monokda-v2-inproj-probe: bad arguments (usage: monokda-v2-inproj-probe [MODE] [REPS >= 1]; modes: "
                             "residency rate tune inproj ab delay trace check seam seamcheck heads tailhop fused all)\n");
        return 2;
    }
    int dev = 0, count = 0;
    cudaDeviceProp prop{};
    // no sm_90 GPU: skipped (exit 77, as ctest's gpu tests are told)
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 || cudaGetDeviceProperties(&prop, dev) != cudaSuccess || prop.major != 9) {
        std::printf("monokda-v2-inproj-probe: no sm_90 GPU here: skipped\n");
        return 77;
    }
    check(cudaSetDevice(dev), "device");
    std::printf("monokda-v2-inproj-probe on %s, %d SMs; weight %d x %d bf16 packed for %d clusters x %d\n", prop.name,
                prop.multiProcessorCount, N, D, kClusters, kRanks);
    Device d = setup();
    {
        int active = 0;
        cudaLaunchConfig_t cfg{};
        cfg.gridDim = dim3(kCtas), cfg.blockDim = dim3(kThreads), cfg.dynamicSmemBytes = size_t(kSmemMax - 4096);
        check(cudaOccupancyMaxActiveClusters(&active, inproj<8, 1>, &cfg), "max active clusters");
        std::printf("clusters of %d co-resident at %d B shared memory, %d threads: %d (need %d)\n", kRanks, kSmemMax - 4096,
                    kThreads, active, kClusters);
    }
    int rc = 0;
    const int sizes[4] = {1, 4, 16, 64};
    Case best[4];
    for (int k = 0; k < 4; ++k) best[k] = derisk_setting(sizes[k]);
    if (mode == "residency" || mode == "all") residency();
    if (mode == "rate" || mode == "all")
        for (int kq : {kKq8, kKq14})
            for (int stages : {3, 4, 6, 8})
                for (int read : {0, 1})
                    if (kq * 4 * kTileBytes * stages <= 200 * 1024) {
                        Case c{1, kq, stages, 2, 0, 0, 0};
                        c.compute = read ? 2 : 0;
                        print_row("rate", c, run(d, c, reps));
                    }
    if (mode == "tune" || mode == "all")
        for (int k = 0; k < 4; ++k) best[k] = tune(d, sizes[k], std::max(5, reps / 2));
    if (mode == "inproj" || mode == "all")
        for (int k = 0; k < 4; ++k) {
            print_row("first", derisk_setting(sizes[k]), run(d, derisk_setting(sizes[k]), reps));
            print_row("best", best[k], run(d, best[k], reps));
        }
    if (mode == "ab" || mode == "all")  // one knob at a time against the best setting, twice, interleaved
        for (int k : {0, 2})
            for (int round = 0; round < 2; ++round) {
                Case c = best[k];
                print_row("ab", c, run(d, c, reps));
                Case t = c;
                t.param_tables = 1 - c.param_tables, print_row("ab", t, run(d, t, reps));
                t = c, t.products = 0, print_row("ab-mma", t, run(d, t, reps));
                t = c, t.compute = 3, print_row("ab-nohop", t, run(d, t, reps));
                t.products = 0, print_row("ab-nohop-add", t, run(d, t, reps));
                t.xfrag = 0, print_row("ab-nohop-add-nox", t, run(d, t, reps));
                for (int fp : {1, 8}) {  // only clusters 0..fp-1 add; the rest read (is the clock a CTA's own)
                    Case f = t;
                    f.fp_clusters = fp, print_row("ab-fp-part", f, run(d, f, reps));
                }
                for (int w : {1, 2}) {  // only w of the eight consumer warps add: is the drop a matter of how much
                    Case f = t;
                    f.fp_warps = w, print_row("ab-fp-warps", f, run(d, f, reps));
                }
                t = c, t.compute = 0, print_row("ab-rate", t, run(d, t, reps));  // the stream alone
                t.compute = 2, print_row("ab-reads", t, run(d, t, reps));         // with the tile reads
                t.compute = 4, print_row("ab-reads-x", t, run(d, t, reps));       // and x staged first
                t = c, t.poll = 1, print_row("ab", t, run(d, t, reps));
                t = c, t.poll = 2, print_row("ab", t, run(d, t, reps));
                t = c, t.early_free = 1 - c.early_free, print_row("ab", t, run(d, t, reps));
                t = c, t.early = c.early ? 0 : std::min(2, c.cap()), print_row("ab", t, run(d, t, reps));
            }
    if (mode == "delay" || mode == "all")
        for (int k : {0, 2}) {
            // the best setting, the same in-flight cap with the deepest ring that fits, and the deepest
            // ring with one receive slot and three copies in flight (the most slots left to buffer x)
            Case deep = best[k], buffer = best[k];
            deep.inflight = deep.cap(), deep.stages = kMaxStages;
            while (!fits(deep) && deep.stages > best[k].stages) --deep.stages;
            buffer.inflight = 3, buffer.slots = 1, buffer.stages = kMaxStages;
            while (!fits(buffer) && buffer.stages > 3) --buffer.stages;
            for (Case c : {best[k], deep, buffer})
                for (unsigned long long delay : {0ull, 1500ull, 3000ull, 4500ull}) {
                    c.delay_ns = delay;
                    print_row("delay", c, run(d, c, reps));
                }
        }
    if (mode == "trace" || mode == "all") {
        for (int k : {0, 2}) trace_mode(d, best[k]);
        Case alone = best[0];  // the same ring streaming alone: its refill cycle without in_proj's work
        alone.compute = 0;
        trace_mode(d, alone);
    }
    if (mode == "seam" || mode == "all") rc |= seam_mode(d, reps, true);
    if (mode == "seamcheck") rc |= seam_mode(d, reps, false);
    if (mode == "heads" || mode == "all") rc |= heads_mode(d, reps);
    if (mode == "tailhop" || mode == "all") rc |= tailhop_mode(d, reps);
    if (mode == "fused" || mode == "all") rc |= fused_mode(d, reps);
    if (mode == "check" || mode == "all") {
        rc |= check_mode(d, best);
        Case first[4];
        for (int k = 0; k < 4; ++k) first[k] = derisk_setting(sizes[k]);
        rc |= check_mode(d, first);
    }
    return rc;
}
