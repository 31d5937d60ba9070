// monokda-icache-probe: what it costs an SM to run code it has not run before in this launch.
//
// Instruction fetch is what paces the fused kernel's one-shot phases (the attn role, the kda tasks),
// which run their code once a launch (docs/decisions/0017-kernel-entry-warm-up.md, 0020-kda-code-size.md).
// This probe measures that directly:
// CTA 0 runs a straight-line body of N independent-chain FMAs (16 bytes of SASS each, no branch)
// three times in a rolled loop, so the same code runs cold once and then twice more, with a
// globaltimer stamp around each pass; the other CTAs optionally stream a large buffer from device
// memory meanwhile (the kernel's weight stream), and an optional flush kernel before each launch
// reads 256 MB so that the body's code is not in L2 either.
//
// A second part does the same for code entered through jumps (a jump table into 64 blocks, in address
// order or shuffled), by one warp or eight: the cost of a taken branch to code not run yet.
//
// Usage: monokda-icache-probe [REPS]  (default 15 launches a case; prints medians, µs)
#include "kernels/vendor/gpu.hpp"  // now_ns: the kernel's own timer shim
#include "bench/probes/probe_util.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using monokda::gpu::now_ns;

constexpr int kThreads = 256;

// N FMAs over 8 independent chains: ptxas cannot fold fmaf chains, so this is N FFMA instructions
// of straight-line code (N·16 bytes).
template <int N>
__device__ __forceinline__ void body(float (&a)[8], float b, float c) {
#pragma unroll
    for (int i = 0; i < N; ++i) a[i & 7] = fmaf(a[i & 7], b, c);
}

// Three passes of run(a, b, c) by the whole CTA, a stamp before each and after the last; the FMA
// chains' inputs come from memory and their result is kept live, so nothing is folded away.
template <class Run>
__device__ __forceinline__ void three_passes(const float* in, float* out, uint64_t* stamps, Run run) {
    float a[8];
    for (int i = 0; i < 8; ++i) a[i] = in[2] + float(threadIdx.x) * 1e-3f + float(i);
    const float b = in[0], c = in[1];
    __syncthreads();
#pragma unroll 1
    for (int pass = 0; pass < 3; ++pass) {
        if (threadIdx.x == 0) stamps[pass] = now_ns();
        run(a, b, c);
        __syncthreads();
    }
    if (threadIdx.x == 0) stamps[3] = now_ns();
    float s = 0.f;
    for (int i = 0; i < 8; ++i) s += a[i];
    if (s == 1234.5f) out[threadIdx.x] = s;  // never true for the inputs used
}

// CTA 0: wait `delay_ns` (the streamers get going), then three passes over the body, stamped.
// Other CTAs: stream `n16` 16-byte words with four loads in flight a thread, until CTA 0 is done.
template <int N>
__global__ void __launch_bounds__(kThreads, 1) probe(const float* in, float* out, uint64_t* stamps, const uint4* buf,
                                                    size_t n16, int delay_ns, volatile int* done) {
    if (blockIdx.x == 0) {
        const uint64_t t0 = now_ns();
        while (now_ns() - t0 < uint64_t(delay_ns)) {
        }
        three_passes(in, out, stamps, [](float (&a)[8], float b, float c) { body<N>(a, b, c); });
        if (threadIdx.x == 0) *done = 1;
        return;
    }
    uint32_t x = 0;
    const size_t stride = size_t(gridDim.x - 1) * kThreads * 4;
    for (size_t i = size_t(blockIdx.x - 1) * kThreads * 4 + threadIdx.x; i + 3 * kThreads < n16 && !*done; i += stride) {
        uint4 v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) v[k] = __ldg(buf + i + size_t(k) * kThreads);
#pragma unroll
        for (int k = 0; k < 4; ++k) x ^= v[k].x ^ v[k].w;
    }
    if (x == 0x12345678u) out[kThreads + threadIdx.x] = float(x);
}

// The same question for code that jumps: kJumpBlocks distinct blocks of 32 FMAs (512 bytes each,
// each with its own constant so none is merged with another), entered through a switch in the order
// `order` gives (a jump table: every entry is a taken branch to a block not run yet in pass 0), by
// the first `warps` warps of CTA 0. Nothing streams.
constexpr int kJumpBlocks = 64;
#define MONOKDA_CASE(n) \
    case n:            \
        body<32>(a, b + float(n) * 1e-7f, c); \
        break;
#define MONOKDA_CASES8(n) MONOKDA_CASE(n) MONOKDA_CASE(n + 1) MONOKDA_CASE(n + 2) MONOKDA_CASE(n + 3) \
    MONOKDA_CASE(n + 4) MONOKDA_CASE(n + 5) MONOKDA_CASE(n + 6) MONOKDA_CASE(n + 7)

__global__ void __launch_bounds__(kThreads, 1) probe_jumps(const float* in, float* out, uint64_t* stamps,
                                                          const int* order, int warps) {
    __shared__ int seq[kJumpBlocks];  // the order in shared memory: pass 0 waits for no data load
    if (threadIdx.x < kJumpBlocks) seq[threadIdx.x] = order[threadIdx.x];
    three_passes(in, out, stamps, [&](float (&a)[8], float b, float c) {
        if (int(threadIdx.x) >= 32 * warps) return;
#pragma unroll 1
        for (int i = 0; i < kJumpBlocks; ++i) {
            switch (seq[i]) {
                MONOKDA_CASES8(0) MONOKDA_CASES8(8) MONOKDA_CASES8(16) MONOKDA_CASES8(24)
                MONOKDA_CASES8(32) MONOKDA_CASES8(40) MONOKDA_CASES8(48) MONOKDA_CASES8(56)
                default: break;
            }
        }
    });
}
#undef MONOKDA_CASES8
#undef MONOKDA_CASE

// 256 KB of other straight-line code run on every SM: evicts the measured code from the SMs'
// instruction caches (a plain data flush does not touch them), as the fused kernel's 540 KB of code
// does to itself between two launches.
__global__ void __launch_bounds__(kThreads, 1) thrash(const float* in, float* out) {
    float a[8];
    for (int i = 0; i < 8; ++i) a[i] = in[2] + float(threadIdx.x) * 1e-3f + float(i);
    body<16384>(a, in[0] * 0.5f, in[1]);
    float s = 0.f;
    for (int i = 0; i < 8; ++i) s += a[i];
    if (s == 1234.5f) out[threadIdx.x] = s;
}

__global__ void flush(const uint4* buf, size_t n16, float* out) {
    uint32_t x = 0;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n16; i += size_t(gridDim.x) * blockDim.x)
        x ^= __ldg(buf + i).y;
    if (x == 0x12345678u) out[0] = float(x);
}

void check(cudaError_t e, const char* what) { monokda::probe::check("monokda-icache-probe", e, what); }

struct Bufs {
    float *in, *out;
    uint64_t* stamps;
    uint4* buf;
    size_t n16;
    int* done;
    int sms;
};

template <int N>
void run_case(const Bufs& b, int reps, int streamers, bool flush_l2, bool first_only, bool sm_cold) {
    std::vector<double> p[3];
    for (int r = 0; r < reps; ++r) {
        if (flush_l2) flush<<<b.sms * 4, 512>>>(b.buf, std::min(b.n16, size_t(256) << 16), b.out);  // 256 MB
        if (sm_cold) thrash<<<b.sms, kThreads>>>(b.in, b.out);
        check(cudaMemset(b.done, 0, sizeof(int)), "clearing the flag");
        probe<N><<<1 + streamers, kThreads>>>(b.in, b.out, b.stamps, b.buf, b.n16, streamers ? 5000 : 0, b.done);
        check(cudaDeviceSynchronize(), "the probe");
        uint64_t s[4];
        check(cudaMemcpy(s, b.stamps, sizeof(s), cudaMemcpyDeviceToHost), "reading the stamps");
        for (int k = 0; k < 3; ++k) p[k].push_back(double(s[k + 1] - s[k]) / 1000.0);
        if (first_only) break;
    }
    const auto med = monokda::probe::median<double>;
    std::printf("%7.0f KB  %9s  %-7s %-9s  %8.2f  %8.2f  %8.2f  %8.3f\n", N * 16 / 1024.0,
                first_only ? "first" : std::to_string(streamers).c_str(), sm_cold ? "cold" : "as left",
                flush_l2 ? "flushed" : "kept",
                med(p[0]), med(p[1]), med(p[2]), (med(p[0]) - med(p[1])) / (N * 16 / 1024.0));
}

void run_jumps(const Bufs& b, int reps, const int* d_order, const char* label, int warps, bool flush_l2) {
    std::vector<double> p[3];
    for (int r = 0; r < reps; ++r) {
        if (flush_l2) flush<<<b.sms * 4, 512>>>(b.buf, std::min(b.n16, size_t(256) << 16), b.out);
        thrash<<<b.sms, kThreads>>>(b.in, b.out);  // always cold in the SM
        probe_jumps<<<1, kThreads>>>(b.in, b.out, b.stamps, d_order, warps);
        check(cudaDeviceSynchronize(), "the jump probe");
        uint64_t s[4];
        check(cudaMemcpy(s, b.stamps, sizeof(s), cudaMemcpyDeviceToHost), "reading the stamps");
        for (int k = 0; k < 3; ++k) p[k].push_back(double(s[k + 1] - s[k]) / 1000.0);
    }
    const auto med = monokda::probe::median<double>;
    std::printf("%11s  %5d  %-9s  %8.2f  %8.2f  %8.2f  %8.3f  %8.3f\n", label, warps, flush_l2 ? "flushed" : "kept",
                med(p[0]), med(p[1]), med(p[2]), (med(p[0]) - med(p[1])) / kJumpBlocks, med(p[1]) / kJumpBlocks);
}

template <int N>
void run_size(const Bufs& b, int reps) {
    run_case<N>(b, reps, 0, false, true, false);  // the instantiation's first launch: its code fetched from device memory
    for (int streamers : {0, b.sms / 2, b.sms - 1})
        for (bool cold : {false, true})
            for (bool fl : {false, true}) run_case<N>(b, reps, streamers, fl, false, cold);
}

}  // namespace

int main(int argc, char** argv) {
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "reading the device");
    Bufs b{};
    b.sms = prop.multiProcessorCount;
    b.n16 = (size_t(1) << 30) / 16;  // 1 GiB: the streamers do not reach its end before CTA 0 is done
    check(cudaMalloc(&b.in, 16), "allocating");
    check(cudaMalloc(&b.out, 4096), "allocating");
    check(cudaMalloc(&b.stamps, 64), "allocating");
    check(cudaMalloc(&b.done, 4), "allocating");
    check(cudaMalloc(&b.buf, b.n16 * 16), "allocating the stream buffer");
    check(cudaMemset(b.buf, 1, b.n16 * 16), "filling the stream buffer");
    const float in[4] = {0.999f, 1e-3f, 0.5f, 0.f};
    check(cudaMemcpy(b.in, in, sizeof(in), cudaMemcpyHostToDevice), "uploading");
    std::printf("%s, %d SMs; CTA 0 of %d threads runs a straight-line body three times (pass 0: its first run in the launch)\n"
                "streamers: CTAs reading 1 GiB meanwhile (first: the instantiation's first launch, nothing streaming);\n"
                "SM cold: 256 KB of other code run on every SM before each launch (as left: whatever the last launch left);\n"
                "flushed: 256 MB read before each launch; medians of %d launches, µs; last column (pass 0 - pass 1) / KB\n",
                prop.name, b.sms, kThreads, reps);
    std::printf("   code  streamers  SM      L2         pass 0    pass 1    pass 2   cold µs/KB\n");
    run_size<256>(b, reps);
    run_size<1024>(b, reps);
    run_size<4096>(b, reps);
    run_size<8192>(b, reps);

    std::printf("\n%d blocks of 512 bytes entered through a jump table, %d times a pass, by W warps of CTA 0, cold in the SM;\n"
                "cold jump: (pass 0 - pass 1) / %d, what a jump to code not run yet adds, µs; warm jump: pass 1 / %d,\n"
                "a jump and its 512-byte block; \"N blocks\": a shuffled order over the first N blocks only, repeated\n",
                kJumpBlocks, kJumpBlocks, kJumpBlocks, kJumpBlocks);
    std::printf("      order  warps  L2         pass 0    pass 1    pass 2  cold jump  warm jump\n");
    int* d_order;
    check(cudaMalloc(&d_order, 2 * kJumpBlocks * sizeof(int)), "allocating");
    std::vector<int> order(2 * kJumpBlocks);  // in address order, then a fixed shuffle the fetcher cannot run ahead of
    for (int i = 0; i < kJumpBlocks; ++i) order[size_t(i)] = order[size_t(kJumpBlocks + i)] = i;
    uint32_t rng = 12345;
    for (int i = kJumpBlocks - 1; i > 0; --i) {
        rng = rng * 1664525u + 1013904223u;
        std::swap(order[size_t(kJumpBlocks + i)], order[size_t(kJumpBlocks) + rng % uint32_t(i + 1)]);
    }
    check(cudaMemcpy(d_order, order.data(), order.size() * sizeof(int), cudaMemcpyHostToDevice), "uploading the orders");
    for (bool sh : {false, true})
        for (int w : {1, 8})
            for (bool fl : {false, true})
                run_jumps(b, reps, d_order + (sh ? kJumpBlocks : 0), sh ? "shuffled" : "in order", w, fl);
    // how many distinct blocks the jumps may visit before each one costs what the full set does
    for (int nb : {2, 4, 8, 16, 32}) {
        std::vector<int> sub(static_cast<size_t>(kJumpBlocks));
        for (int i = 0, k = 0; i < kJumpBlocks; ++i)  // the shuffled order's entries below nb, cycled
            while (true) {
                const int v = order[size_t(kJumpBlocks + (k++ % kJumpBlocks))];
                if (v < nb) { sub[size_t(i)] = v; break; }
            }
        check(cudaMemcpy(d_order, sub.data(), sub.size() * sizeof(int), cudaMemcpyHostToDevice), "uploading an order");
        const std::string label = std::to_string(nb) + " blocks";
        run_jumps(b, reps, d_order, label.c_str(), 1, false);
    }
    return 0;
}
