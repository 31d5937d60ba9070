// monokda-stream-probe: how fast the H200 streams the k3 in_proj weight [6288 × 7168] bf16 into
// shared memory through the copy engine (TMA, 16-row × 64-column boxes with the 128-byte swizzle,
// as kernels/kda_gemv_batch.hpp reads it), with nothing else running: no x, no products, no other
// role. Varied: how many CTAs stream, which 16-row groups a CTA owns (round-robin over the whole
// weight, as the plan deals them, or one contiguous band), how many columns a stage holds, and how
// many stages are in flight. It isolates the weight stream's own rate from the rest of kda_pre.
// Four weight copies are rotated so that L2 (60 MB) never holds the one being read.
// `monokda-stream-probe REPS kernel-parts` times only the kernel's layout (bands, 4 tall boxes a
// 256-column step, 2 ahead) with the gemv pass's other work added one part at a time: its matrix
// products, its x copies, its sleeping wait; and the same stream placed as kda_pre places its gemv
// CTAs (indices 56..131 of a 132-CTA grid) against indices 0..75 and every other index: to find
// what slowed the stream inside kda_pre (the products: 3.18 -> 1.25 TB/s, 2026-11-30-h200-ncu-gemv.md).
// `monokda-stream-probe REPS per-cta` times one CTA's stream against the number of CTAs streaming
// (stream_band below).
// Usage: monokda-stream-probe [REPS] [kernel-parts | per-cta]
#include "kernels/vendor/gpu.hpp"  // the copy-engine, cp.async and matrix-unit shims the kernel uses
#include "kernels/kda_args.hpp"   // the production shape (k3) and the kernel's block size
#include "kernels/vendor/tensor_map.hpp"

#include "bench/probes/probe_util.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace probe = monokda::probe;

using namespace monokda::gpu;

using k3::D, k3::N, k3::kGroupRows, k3::kGroups;
constexpr int kBoxCols = 64, kBoxBytes = kGroupRows * kBoxCols * 2, kMaxG = 6, kMaxStages = 24;
constexpr int kSmemLimit = 220 * 1024;
constexpr int kXRowWords = 256 / 2 + 4, kXBytes = 2 * 64 * kXRowWords * 4;  // x ring: 2 stages of 64 rows

struct Variant {
    int ctas;         // CTAs streaming (grid size)
    bool contiguous;  // groups: a contiguous band per CTA (else round-robin: g ≡ cta mod ctas)
    int boxes;        // 64-column boxes a group a stage (columns a stage = 64 · boxes)
    int ahead;        // stages in flight while one is consumed
    bool tall;        // contiguous only: one box of all the CTA's rows (16·G) a 64-column step
    bool lanes;       // the boxes of a stage issued by lanes of warp 0, one each (else thread 0 alone)
    int tall_groups;  // rows of a tall box / 16 (the tensor map's box; a short last band reads zeros past N)
    // what the kernel's gemv pass does besides streaming (tall, 4 boxes a stage only), to find which
    // part slows the stream inside kda_pre (docs/results/2026-11-30-h200-stream-probe.md):
    int mma_tiles;    // 0: none; T: the pass's fragment loads and matrix products for T token tiles
    int x_rows;       // 0: none; S: cp.async of S x rows × 256 columns a stage into a 2-stage ring
    bool sleep_wait;  // wait like the kernel's bounded poll: 100 ns sleeps between tries
    // where the streaming CTAs sit in a larger grid (kda_pre's gemv CTAs are 56..131 of 132):
    int grid;         // CTAs launched (0: ctas); CTA first + stride·j streams as CTA j, the rest exit
    int first, stride;
};

__global__ void __launch_bounds__(kThreads, 1) stream(const __grid_constant__ CUtensorMap map,
                                                      const __grid_constant__ CUtensorMap tall_map, Variant v,
                                                      const uint16_t* x, uint32_t* sink) {
    extern __shared__ unsigned char raw[];
    unsigned char* base = raw + ((1024u - (smem_u32(raw) & 1023u)) & 1023u);
    __shared__ uint64_t full[kMaxStages];
    __shared__ int groups[kMaxG];
    __shared__ int G;
    const int rel = int(blockIdx.x) - v.first, me = rel / max(v.stride, 1);
    if (rel < 0 || rel % max(v.stride, 1) != 0 || me >= v.ctas) return;  // not a streaming CTA
    if (threadIdx.x == 0) {
        int n = 0;
        if (v.contiguous) {
            const int per = (kGroups + v.ctas - 1) / v.ctas, g0 = me * per;
            for (int g = g0; g < min(kGroups, g0 + per) && n < kMaxG; ++g) groups[n++] = g;
        } else {
            for (int g = me; g < kGroups && n < kMaxG; g += v.ctas) groups[n++] = g;
        }
        G = n;
        for (int s = 0; s <= v.ahead; ++s) mbar_init(&full[s], 1);
        mbar_init_fence();
    }
    __syncthreads();
    const int stages = v.ahead + 1, chunks = D / (kBoxCols * v.boxes);
    const int stage_bytes = (v.tall ? v.tall_groups : G) * v.boxes * kBoxBytes;
    // thread t of warp 0 issues the boxes t, t + 32, ... (one issuer: thread 0 issues them all)
    auto issue = [&](int ch) {
        const int s = ch % stages, issuers = v.lanes ? 32 : 1;
        if (!v.lanes && threadIdx.x != 0) return;
        if (threadIdx.x == 0) mbar_arrive_expect(&full[s], uint32_t(stage_bytes));
        if (v.lanes) __syncwarp();
        const int nbox = v.tall ? v.boxes : G * v.boxes;
        for (int i = threadIdx.x; i < nbox; i += issuers) {
            const int gi = v.tall ? 0 : i / v.boxes, b = v.tall ? i : i % v.boxes;
            const int box_bytes = v.tall ? v.tall_groups * kBoxBytes : kBoxBytes;
            bulk_tensor_2d(base + size_t(s) * stage_bytes + size_t(i) * box_bytes, v.tall ? &tall_map : &map,
                           (ch * v.boxes + b) * kBoxCols, groups[gi] * kGroupRows, &full[s], l2_policy(false));
        }
    };
    if (G == 0) return;
    if (threadIdx.x < 32)
        for (int ch = 0; ch < min(v.ahead, chunks); ++ch) issue(ch);
    uint32_t acc = 0;
    float fa[6][4][4] = {};
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, cq = lane % 4, kw = warp % 4, ts = warp / 4;
    // the x ring after the weight stages (the host sizes shared memory for it when x_rows or mma_tiles > 0)
    auto xs = reinterpret_cast<uint32_t(*)[64][kXRowWords]>(base + size_t(stages) * stage_bytes);
    auto issue_x = [&](int ch) {  // the kernel's x copies: S rows × 256 columns
        if (v.x_rows > 0 && ch < chunks)
            for (int i = threadIdx.x; i < v.x_rows * 32; i += kThreads) {
                const int r = i / 32, q = i % 32;
                copy16_async(&xs[ch % 2][r][q * 4], x + size_t(r) * D + size_t(ch) * 256 + q * 8);
            }
        async_commit();
    };
    issue_x(0);
    for (int ch = 0; ch < chunks; ++ch) {
        const int s = ch % stages;
        const uint32_t parity = uint32_t(ch / stages) & 1u;
        async_wait<0>();
        while (!mbar_try_wait(&full[s], parity))
            if (v.sleep_wait) pause(100);
        acc += reinterpret_cast<const uint32_t*>(base + size_t(s) * stage_bytes)[threadIdx.x];  // touch the stage
        __syncthreads();  // every thread is done with stage (ch - 1) % stages
        if (threadIdx.x < 32 && ch + v.ahead < chunks) issue(ch + v.ahead);
        issue_x(ch + 1);
        if (v.mma_tiles > 0 && v.tall && v.boxes == 4) {  // the products as the pass once ran them: guards at run time (docs/decisions/0005-gemv-pass-band-boxes.md)
            const uint32_t* w = reinterpret_cast<const uint32_t*>(base + size_t(s) * stage_bytes) +
                                size_t(kw) * v.tall_groups * kGroupRows * 32;
#pragma unroll
            for (int st = 0; st < 4; ++st) {
                const int p0 = ((2 * st) ^ g) * 4 + cq, p1 = ((2 * st + 1) ^ g) * 4 + cq, word = (kw * 4 + st) * 8 + cq;
                uint32_t b[4][2];
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    b[u][0] = xs[ch % 2][g][word];
                    b[u][1] = xs[ch % 2][g][word + 4];
                }
#pragma unroll
                for (int gi = 0; gi < 6; ++gi) {
                    if (gi < G) {
                        const int r = gi * kGroupRows + g;
                        const uint32_t a0 = w[r * 32 + p0], a1 = w[(r + 8) * 32 + p0];
                        const uint32_t a2 = w[r * 32 + p1], a3 = w[(r + 8) * 32 + p1];
#pragma unroll
                        for (int u = 0; u < 4; ++u)
                            if (ts + 2 * u < v.mma_tiles) mma_bf16_16816(fa[gi][u], a0, a1, a2, a3, b[u][0], b[u][1]);
                    }
                }
            }
        }
    }
    async_wait<0>();
    float fsum = 0;
    for (int gi = 0; gi < 6; ++gi)
        for (int u = 0; u < 4; ++u) fsum += fa[gi][u][0] + fa[gi][u][3];
    if (fsum == 1234.5f) sink[1] = 1;
    if (acc == 0x12345678u) sink[0] = acc;  // keeps the reads
}

// `per-cta` mode: `ctas` CTAs each stream `passes` bands of G groups the way the kernel's pass
// does (one tall box of 16·G rows × 64 columns, 4 boxes a 256-column step, `ahead` steps in flight,
// evict-first), band (offset + (p·ctas + me)·G) mod (kGroups − G), nothing else: how fast one CTA
// streams when few CTAs do and DRAM is far from its rate.
struct BandRun {
    int ctas, G, ahead, passes, offset;
};

__global__ void __launch_bounds__(kThreads, 1) stream_band(const __grid_constant__ CUtensorMap tall_map, BandRun v,
                                                           uint32_t* sink) {
    extern __shared__ unsigned char raw[];
    unsigned char* base = raw + ((1024u - (smem_u32(raw) & 1023u)) & 1023u);
    __shared__ uint64_t full[8];
    const int me = int(blockIdx.x), chunks = D / 256, steps = chunks * v.passes, stages = v.ahead + 1;
    const uint32_t stage_bytes = uint32_t(v.G * 4 * kBoxBytes);
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) mbar_init(&full[s], 1);
        mbar_init_fence();
    }
    __syncthreads();
    auto issue = [&](int q) {  // thread 0: step q's four boxes
        const int s = q % stages, p = q / chunks, ch = q % chunks;
        const int g0 = (v.offset + (p * v.ctas + me) * v.G) % (kGroups - v.G);
        mbar_arrive_expect(&full[s], stage_bytes);
        for (int b = 0; b < 4; ++b)
            bulk_tensor_2d(base + size_t(s) * stage_bytes + size_t(b) * v.G * kBoxBytes, &tall_map, (ch * 4 + b) * kBoxCols,
                           g0 * kGroupRows, &full[s], l2_policy(true));
    };
    if (threadIdx.x == 0)
        for (int q = 0; q < min(v.ahead, steps); ++q) issue(q);
    uint32_t acc = 0;
    for (int q = 0; q < steps; ++q) {
        const int s = q % stages;
        while (!mbar_try_wait(&full[s], uint32_t(q / stages) & 1u)) {
        }
        acc += reinterpret_cast<const uint32_t*>(base + size_t(s) * stage_bytes)[threadIdx.x];
        __syncthreads();  // every thread is done with step q - 1's stage, the one step q + ahead refills
        if (threadIdx.x == 0 && q + v.ahead < steps) issue(q + v.ahead);
    }
    if (acc == 0x12345678u) sink[0] = acc;
}

void check(cudaError_t e, const char* what) { probe::check("stream-probe", e, what); }

constexpr int kSets = 4;  // weight copies rotated, so that L2 never holds the one being read

// The median (over reps, after two warm-ups) of one launch's time, each sample a group of kSets
// launches (launch_set issues them) over kSets.
template <class LaunchSet>
float median_launch_us(int reps, cudaEvent_t e0, cudaEvent_t e1, LaunchSet launch_set) {
    std::vector<float> t;
    for (int r = 0; r < reps + 2; ++r) {
        check(cudaEventRecord(e0), "record");
        launch_set();
        check(cudaEventRecord(e1), "record");
        check(cudaEventSynchronize(e1), "sync");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
        if (r >= 2) t.push_back(ms * 1000.0f / kSets);
    }
    check(cudaGetLastError(), "launch");
    return probe::median(t);
}

}  // namespace

int main(int argc, char** argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 30;
    const size_t bytes = size_t(N) * D * 2;
    std::vector<void*> w(kSets);
    std::vector<CUtensorMap> maps(kSets);
    std::vector<CUtensorMap> tall[kMaxG + 1];  // tall[g]: boxes of 16·g rows (a band of g groups)
    for (int i = 0; i < kSets; ++i) {
        check(cudaMalloc(&w[i], bytes), "cudaMalloc");
        check(cudaMemset(w[i], 0x3c + i, bytes), "cudaMemset");
        for (int k = 0; k <= kMaxG; ++k) {  // k = 0: the 16-row group map
            CUtensorMap m;
            const std::string err = encode_bf16_tensor_map(m, w[i], N, D, k == 0 ? kGroupRows : k * kGroupRows, kBoxCols);
            if (!err.empty()) {
                fprintf(stderr, "stream-probe: %s\n", err.c_str());
                return 1;
            }
            if (k == 0) maps[i] = m;
            else tall[k].push_back(m);
        }
    }
    uint32_t* sink;
    check(cudaMalloc(&sink, 8), "cudaMalloc");
    uint16_t* xbuf;
    check(cudaMalloc(&xbuf, size_t(64) * D * 2), "cudaMalloc");
    check(cudaMemset(xbuf, 0x3c, size_t(64) * D * 2), "cudaMemset");
    // sm_90: 227 KB a block in all, less the kernel's few static bytes; no variant asks for more
    check(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024 - 1024), "smem");
    int sms = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "sms");
    std::vector<Variant> vs;
    for (int ctas : {76, sms, 2 * sms})
        for (int mode = 0; mode < 4; ++mode)  // round-robin; contiguous; contiguous, lanes issue; tall boxes
            for (int boxes : {1, 2, 4, 8}) {
                const int G = std::min(kMaxG, (kGroups + ctas - 1) / ctas);
                const int per_cta_smem = ctas > sms ? kSmemLimit / 2 : kSmemLimit;
                const int stage = G * boxes * kBoxBytes, max_ahead = std::min(kMaxStages, per_cta_smem / stage) - 1;
                if (max_ahead < 2) continue;
                for (int ahead = 2; ahead <= max_ahead; ahead = ahead < max_ahead ? max_ahead : max_ahead + 1)
                    vs.push_back({ctas, mode > 0, boxes, ahead, mode == 3, mode == 2, G, 0, 0, false, 0, 0, 1});  // 2, most
            }
    if (argc > 2 && std::string(argv[2]) == "kernel-parts") {  // only the kernel's layout, part by part
        vs.clear();
        for (int ctas : {76, sms}) {
            const int G = std::min(kMaxG, (kGroups + ctas - 1) / ctas);
            for (int part = 0; part < 7; ++part) {
                Variant v{ctas, true, 4, 2, true, false, G, 0, 0, false, 0, 0, 1};
                if (part == 1) v.mma_tiles = 1;
                if (part == 2) v.mma_tiles = 8;
                if (part == 3) v.x_rows = 1;
                if (part == 4) v.x_rows = 64;
                if (part == 5) v.sleep_wait = true;
                if (part == 6) v.mma_tiles = 1, v.x_rows = 1, v.sleep_wait = true;
                vs.push_back(v);
            }
        }
        // placement: the same 76-CTA band stream as CTAs 0..75 or 56..131 of a 132-CTA grid (the
        // kernel's gemv CTAs), or 66 CTAs on every other CTA index
        const int G76 = std::min(kMaxG, (kGroups + 75) / 76), G66 = std::min(kMaxG, (kGroups + 65) / 66);
        vs.push_back({76, true, 4, 2, true, false, G76, 0, 0, false, sms, 0, 1});
        vs.push_back({76, true, 4, 2, true, false, G76, 0, 0, false, sms, sms - 76, 1});
        vs.push_back({66, true, 4, 2, true, false, G66, 0, 0, false, sms, 0, 1});
        vs.push_back({66, true, 4, 2, true, false, G66, 0, 0, false, sms, 0, 2});
    }
    cudaEvent_t e0, e1;
    check(cudaEventCreate(&e0), "event");
    check(cudaEventCreate(&e1), "event");
    if (argc > 2 && std::string(argv[2]) == "per-cta") {
        check(cudaFuncSetAttribute(stream_band, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024 - 1024), "smem");
        printf("| CTAs | groups a CTA | stages in flight | bands a CTA | µs a launch (median of %d) | µs a step | GB/s a CTA | TB/s in all |\n", reps);
        printf("|---|---|---|---|---|---|---|---|\n");
        for (int ctas : {1, 2, 4, 8, 16, 33, 50, 66, 132})
            for (int ahead : {2, 3}) {
                // four bands a CTA below 33 CTAs, three from 33 on (there the later bands wrap round onto rows
                // read ~90 MB earlier, which evict-first L2 no longer holds): steady steps, not a ramp
                const int G = ctas > 66 ? 3 : 6, passes = ctas < 33 ? 4 : 3;
                const size_t smem = size_t(ahead + 1) * G * 4 * kBoxBytes + 1024;
                int offset = 0;
                const float us = median_launch_us(reps, e0, e1, [&] {
                    for (int i = 0; i < kSets; ++i) {  // a new stretch of the weight every launch: nothing from L2
                        stream_band<<<ctas, kThreads, smem>>>(tall[G][size_t(i)], BandRun{ctas, G, ahead, passes, offset}, sink);
                        offset = (offset + ctas * passes * G) % (kGroups - G);
                    }
                });
                const double cta_bytes = double(passes) * G * kGroupRows * D * 2;
                printf("| %d | %d | %d | %d | %.1f | %.3f | %.1f | %.2f |\n", ctas, G, ahead, passes, us, us / (passes * (D / 256)),
                       cta_bytes / (us * 1e-6) / 1e9, cta_bytes * ctas / (us * 1e-6) / 1e12);
            }
        return 0;
    }
    printf("| CTAs | groups a CTA | boxes | columns a stage | stages in flight | KB in flight a CTA | also | µs (median of %d) | TB/s |\n", reps);
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (const Variant& v : vs) {
        const int G = std::min(kMaxG, (kGroups + v.ctas - 1) / v.ctas);
        if (G * v.ctas < kGroups) continue;  // would not cover the weight
        const size_t smem =
            size_t(v.ahead + 1) * (v.tall ? v.tall_groups : G) * v.boxes * kBoxBytes + 1024 + (v.x_rows || v.mma_tiles ? kXBytes : 0);
        const float us = median_launch_us(reps, e0, e1, [&] {
            for (int i = 0; i < kSets; ++i)  // the tall map whose box is the variant's band
                stream<<<v.grid ? v.grid : v.ctas, kThreads, smem>>>(maps[i], tall[v.tall_groups][size_t(i)], v, xbuf, sink);
        });
        char also[96];
        char where[48] = "";
        if (v.grid) snprintf(where, sizeof where, "CTAs %d+%d·j of %d; ", v.first, v.stride, v.grid);
        snprintf(also, sizeof also, "%s%s%s%s", where, v.mma_tiles ? ("products, " + std::to_string(v.mma_tiles) + " tiles; ").c_str() : "",
                 v.x_rows ? ("x copies, " + std::to_string(v.x_rows) + " rows; ").c_str() : "", v.sleep_wait ? "sleeping wait" : "");
        printf("| %d | %d %s | %s | %d | %d | %d | %s | %.1f | %.2f |\n", v.ctas, G, v.contiguous ? "contiguous" : "round-robin",
               v.tall ? "one 16G x 64 box a step" : v.lanes ? "16 x 64, lanes issue" : "16 x 64, thread 0 issues",
               v.boxes * kBoxCols, v.ahead, v.ahead * G * v.boxes * kBoxBytes / 1024, also[0] ? also : "-", us,
               bytes / (us * 1e-6) / 1e12);
    }
    return 0;
}
