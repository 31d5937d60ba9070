// monokda-hop-probe: what kda_pre's seam costs in hand-offs alone, on an idle GPU and beside a
// device-memory stream.
//
// kda_pre makes x through four hand-offs between CTAs: each slice CTA stores its PART words, the
// row's gate CTA reads all 56 and stores WGT, every slice reads WGT and stores its MSQ word, every
// slice reads all 56 MSQ words, stores its x and releases its XRDY flag, and every band CTA waits
// for all 56 flags (docs/kernel.md). This probe runs that skeleton and nothing else: 132 CTAs of
// 256 threads, one an SM (cooperative launch), CTAs 0..55 the slices (0 also the gate), 56..121
// the 66 bands, the rest idle; tagged 64-bit words for PART, WGT and MSQ, a flag for XRDY, with
// the kernel's vendor shims (kernels/vendor/gpu.hpp: relaxed and acquire loads, release store,
// the poll's pause). So the time to x here is the seam's floor on this GPU for its four hops: the
// kernel's sums, loads, slot checks and code fetch come on top.
//
// Cases: the poll's pause (100 ns, the kernel's; or none) and whether the band CTAs' warps 1-7
// stream device memory (16-byte loads, 8 in flight a thread, each CTA its own part of 1 GiB)
// from entry until their warp 0 has seen x, as a weight stream in flight before x would.
// A second kernel chains the 56 slices (55 hops in a row) to time one hop finer than the global
// timer's step.
// Usage: monokda-hop-probe [LAUNCHES]  (default 200 a case; prints each hop's median over launches)
#include "kernels/vendor/gpu.hpp"

#include "bench/probes/probe_util.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

namespace probe = monokda::probe;
using probe::median;

using namespace monokda::gpu;

constexpr int kSlices = 56, kBands = 66, kThreadsPerCta = 256, kStamps = 12;
constexpr size_t kStreamBytes = size_t(1) << 30;

// stamp slots a CTA: entry, PART stored, gate saw all PART, WGT stored, WGT seen, MSQ stored, all
// MSQ seen, XRDY released, all XRDY seen (bands), bytes streamed (bands), stream end (bands)
enum Stamp { kEntry, kPart, kGateSaw, kWgt, kWgtSaw, kMsq, kMsqSaw, kXrdy, kXSaw, kBytes, kStreamEnd };

struct Mail {
    uint64_t* part;   // [56] tagged
    uint64_t* wgt;    // [1] tagged
    uint64_t* msq;    // [56] tagged
    uint32_t* xrdy;   // [56] flags
    uint4* x;         // [56][16]: a slice's 256 bytes of x
    uint64_t* t;      // [blocks][kStamps]
    const uint4* buf;  // the stream's 1 GiB
    unsigned* sink;    // keeps the stream's loads
};

// A poll, bounded as the kernel's are: past a second the launch traps (the host reports it).
template <class Ready>
__device__ __forceinline__ void poll(Ready ready, int pause_ns) {
    const uint64_t t0 = now_ns();
    for (unsigned n = 1; !ready(); ++n) {
        if (pause_ns) pause(pause_ns);
        if (n % 16 == 0 && now_ns() - t0 > 1000000000ull) __trap();
    }
}
__device__ __forceinline__ void wait_tagged(const uint64_t* p, uint32_t tag, int pause_ns) {
    poll([&] { return uint32_t(ld_relaxed(p) >> 32) == tag; }, pause_ns);
}

__global__ void __launch_bounds__(kThreadsPerCta, 1) seam(Mail m, uint32_t tag, int pause_ns, int stream, uint64_t launch) {
    __shared__ volatile int x_seen;
    const int b = blockIdx.x, tid = threadIdx.x;
    uint64_t* t = m.t + size_t(b) * kStamps;
    if (tid == 0) t[kEntry] = now_ns(), x_seen = 0;
    __syncthreads();
    if (b < kSlices) {
        if (tid == 0) st_relaxed(m.part + b, uint64_t(tag) << 32 | b), t[kPart] = now_ns();
        if (b == 0) {  // the gate: every slice's PART word, then WGT
            if (tid < kSlices) wait_tagged(m.part + tid, tag, pause_ns);
            __syncthreads();
            if (tid == 0) t[kGateSaw] = now_ns(), st_relaxed(m.wgt, uint64_t(tag) << 32), t[kWgt] = now_ns();
        }
        if (tid == 0) wait_tagged(m.wgt, tag, pause_ns);
        __syncthreads();
        if (tid == 0) t[kWgtSaw] = now_ns(), st_relaxed(m.msq + b, uint64_t(tag) << 32 | b), t[kMsq] = now_ns();
        if (tid < kSlices) wait_tagged(m.msq + tid, tag, pause_ns);
        __syncthreads();
        if (tid == 0) t[kMsqSaw] = now_ns();
        if (tid < 16) m.x[b * 16 + tid] = make_uint4(tag, b, tid, 0);
        fence_before_cta_release();  // as publish_flag (kernels/kda_mailbox.hpp)
        __syncthreads();
        if (tid == 0) st_release(m.xrdy + b, tag), t[kXrdy] = now_ns();
    } else if (b < kSlices + kBands) {
        if (tid < 32) {  // warp 0 waits for every slice's flag, two a lane
            for (int s = tid; s < kSlices; s += 32)
                poll([&] { return ld_acquire(m.xrdy + s) == tag; }, pause_ns);
            __syncwarp();
            if (tid == 0) t[kXSaw] = now_ns(), x_seen = 1;
        } else if (stream) {  // warps 1-7: their CTA's share of the buffer, 8 loads in flight a thread
            const size_t per = kStreamBytes / 16 / kBands, n = per / (8 * 224) * (8 * 224);
            const uint4* p = m.buf + size_t(b - kSlices) * per;
            size_t i = (launch * 8 * 224 * 16) % n + (tid - 32);  // each launch starts elsewhere
            unsigned acc = 0, loads = 0;
            while (!x_seen) {
                const size_t base = i % n;  // n is a multiple of 8·224: the 8 loads stay inside
#pragma unroll
                for (int k = 0; k < 8; ++k) {
                    const uint4 v = __ldcs(p + base + size_t(k) * 224);
                    acc ^= v.x ^ v.w;
                }
                i += 8 * 224, loads += 8;
            }
            if (acc == 0x9e3779b9u) *m.sink = acc;  // never in practice; keeps the loads
            atomicAdd(reinterpret_cast<unsigned long long*>(t + kBytes), uint64_t(loads) * 16);
            if (tid == 32) t[kStreamEnd] = now_ns();
        }
        __syncthreads();
    }
}

// The slices in a chain: CTA j waits for CTA j - 1's word, then stores its own (a tagged word, or
// x's 256 bytes, the block barrier and a flag's release, with or without a device-scope fence in
// every thread before the barrier); 55 hops, so the time a hop takes
// comes out finer than the global timer's step. The band CTAs stream (or not) until the chain ends.
__global__ void __launch_bounds__(kThreadsPerCta, 1) relay(Mail m, uint32_t tag, int flagged, int stream, uint64_t launch) {
    const int b = blockIdx.x, tid = threadIdx.x;
    uint64_t* t = m.t + size_t(b) * kStamps;
    if (b < kSlices) {
        if (b > 0 && tid == 0) {
            if (flagged) poll([&] { return ld_acquire(m.xrdy + b - 1) == tag; }, 100);
            else wait_tagged(m.part + b - 1, tag, 100);
        }
        __syncthreads();
        if (flagged) {
            if (tid < 16) m.x[b * 16 + tid] = make_uint4(tag, b, tid, 0);
            if (flagged == 1) __threadfence();  // 1: as kda_pre's publish_flag did until 2026-12-01
            __syncthreads();
            if (tid == 0) st_release(m.xrdy + b, tag);
        } else if (tid == 0) {
            st_relaxed(m.part + b, uint64_t(tag) << 32 | b);
        }
        if (tid == 0) t[kPart] = now_ns();
        if (b == kSlices - 1 && tid == 0) st_relaxed(m.wgt, uint64_t(tag) << 32);  // the chain's end
    } else if (b < kSlices + kBands && stream) {
        const size_t per = kStreamBytes / 16 / kBands, n = per / (8 * 256) * (8 * 256);
        const uint4* p = m.buf + size_t(b - kSlices) * per;
        size_t i = (launch * 8 * 256 * 16) % n + tid;
        unsigned acc = 0, loads = 0;
        while (uint32_t(ld_relaxed(m.wgt) >> 32) != tag) {
            const size_t base = i % n;
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                const uint4 v = __ldcs(p + base + size_t(k) * 256);
                acc ^= v.x ^ v.w;
            }
            i += 8 * 256, loads += 8;
        }
        if (acc == 0x9e3779b9u) *m.sink = acc;
        atomicAdd(reinterpret_cast<unsigned long long*>(t + kBytes), uint64_t(loads) * 16);
        __syncthreads();
        if (tid == 0) t[kStreamEnd] = now_ns();
    }
}

void check(cudaError_t e, const char* what) { probe::check("monokda-hop-probe", e, what); }

// 3 warm-up launches, then `launches` measured ones of `kernel` (arguments: the mail, a fresh tag,
// `knob`, `stream`, the launch's index), each after its stamps are cleared; `measure` gets the stamp
// of CTA b, slot k of every measured launch.
template <class Measure>
void run_case(void (*kernel)(Mail, uint32_t, int, int, uint64_t), Mail& m, uint32_t& tag, int knob, int stream,
              int blocks, int launches, Measure measure) {
    std::vector<uint64_t> t(size_t(blocks) * kStamps);
    for (int l = -3; l < launches; ++l) {
        ++tag;
        check(cudaMemset(m.t, 0, t.size() * 8), "clear stamps");
        uint64_t li = uint64_t(l + 3);
        void* args[] = {&m, &tag, &knob, &stream, &li};
        check(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(kernel), blocks, kThreadsPerCta, args, 0, 0), "launch");
        check(cudaDeviceSynchronize(), "run");
        if (l < 0) continue;
        check(cudaMemcpy(t.data(), m.t, t.size() * 8, cudaMemcpyDeviceToHost), "stamps");
        measure([&](int b, int k) { return double(t[size_t(b) * kStamps + k]); });
    }
}

}  // namespace

int main(int argc, char** argv) {
    const int launches = argc > 1 ? std::atoi(argv[1]) : 200;
    if (launches < 1 || launches > 100000) {
        std::fprintf(stderr, "monokda-hop-probe: LAUNCHES must be 1..100000\n");
        return 2;
    }
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "device properties");
    const int blocks = prop.multiProcessorCount;
    if (blocks < kSlices + kBands) {
        std::fprintf(stderr, "monokda-hop-probe: needs %d SMs, the device has %d\n", kSlices + kBands, blocks);
        return 2;
    }
    Mail m{};
    check(cudaMalloc(&m.part, kSlices * 8), "alloc");
    check(cudaMalloc(&m.wgt, 8), "alloc");
    check(cudaMalloc(&m.msq, kSlices * 8), "alloc");
    check(cudaMalloc(&m.xrdy, kSlices * 4), "alloc");
    check(cudaMalloc(&m.x, kSlices * 16 * 16), "alloc");
    check(cudaMalloc(&m.t, size_t(blocks) * kStamps * 8), "alloc");
    check(cudaMalloc(reinterpret_cast<void**>(const_cast<uint4**>(&m.buf)), kStreamBytes), "alloc");
    check(cudaMalloc(&m.sink, 4), "alloc");
    check(cudaMemset(m.wgt, 0, 8), "clear");
    check(cudaMemset(m.part, 0, kSlices * 8), "clear");
    check(cudaMemset(m.msq, 0, kSlices * 8), "clear");
    check(cudaMemset(m.xrdy, 0, kSlices * 4), "clear");
    check(cudaMemset(const_cast<uint4*>(m.buf), 1, kStreamBytes), "clear");
    std::printf("device %s, %d SMs; %d slice CTAs (CTA 0 the gate), %d band CTAs; %d launches a case, medians\n",
                prop.name, blocks, kSlices, kBands, launches);
    std::printf("%-22s %8s %8s %8s %8s %8s %8s %10s\n", "case", "PART>gt", "WGT", "MSQ", "XRDY", "XRDYmax", "x at",
                "stream");
    uint32_t tag = 0;
    for (int stream = 0; stream < 2; ++stream)
        for (int pause_ns : {100, 0}) {
            std::vector<double> h1, h2, h3, h4, h4max, xat, rate;
            run_case(seam, m, tag, pause_ns, stream, blocks, launches, [&](auto at) {
                double t0 = at(0, kEntry), part = 0, msq = 0, xr = 0;
                for (int b = 0; b < kSlices + kBands; ++b) t0 = std::min(t0, at(b, kEntry));
                std::vector<double> wgt_saw, msq_saw, x_saw;
                for (int b = 0; b < kSlices; ++b) {
                    part = std::max(part, at(b, kPart)), msq = std::max(msq, at(b, kMsq)), xr = std::max(xr, at(b, kXrdy));
                    wgt_saw.push_back(at(b, kWgtSaw));
                }
                for (int b = 0; b < kSlices; ++b) msq_saw.push_back(at(b, kMsqSaw) - msq);
                double bytes = 0, span = 0;
                for (int b = kSlices; b < kSlices + kBands; ++b) {
                    x_saw.push_back(at(b, kXSaw));
                    bytes += at(b, kBytes), span = std::max(span, at(b, kStreamEnd) - t0);
                }
                h1.push_back((at(0, kGateSaw) - part) / 1e3);
                h2.push_back((median(wgt_saw) - at(0, kWgt)) / 1e3);
                h3.push_back(median(msq_saw) / 1e3);
                h4.push_back((median(x_saw) - xr) / 1e3);
                h4max.push_back((*std::max_element(x_saw.begin(), x_saw.end()) - xr) / 1e3);
                xat.push_back((median(x_saw) - t0) / 1e3);
                if (stream) rate.push_back(bytes / span / 1e3);  // bytes / ns = GB/s; / 1e3: TB/s
            });
            char name[64], sr[32] = "-";
            std::snprintf(name, sizeof name, "%s, pause %d ns", stream ? "stream" : "idle", pause_ns);
            if (stream) std::snprintf(sr, sizeof sr, "%.2f TB/s", median(rate));
            std::printf("%-22s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %10s\n", name, median(h1), median(h2), median(h3),
                        median(h4), median(h4max), median(xat), sr);
        }
    std::printf("\n%-22s %10s %10s\n", "relay (55 hops)", "ns a hop", "stream");
    for (int stream = 0; stream < 2; ++stream)
        for (int flagged = 0; flagged < 3; ++flagged) {
            std::vector<double> hop, rate;
            run_case(relay, m, tag, flagged, stream, blocks, launches, [&](auto at) {
                hop.push_back((at(kSlices - 1, kPart) - at(0, kPart)) / (kSlices - 1));
                double bytes = 0, span = 0;
                for (int b = kSlices; b < kSlices + kBands; ++b)
                    bytes += at(b, kBytes), span = std::max(span, at(b, kStreamEnd) - at(0, kPart));
                if (stream) rate.push_back(bytes / span / 1e3);
            });
            char name[64], sr[32] = "-";
            std::snprintf(name, sizeof name, "%s, %s", stream ? "stream" : "idle",
                          flagged == 2 ? "x + flag, one release" : flagged ? "x + flag, all fence" : "tagged word");
            if (stream) std::snprintf(sr, sizeof sr, "%.2f TB/s", median(rate));
            std::printf("%-22s %10.0f %10s\n", name, median(hop), sr);
        }
    std::printf("(seam µs. PART>gt: the last PART store to the gate's sight of all 56; WGT: the gate's store to a slice's\n"
                " sight, median slice; MSQ: the last MSQ store to a slice's sight of all 56; XRDY / XRDYmax: the last\n"
                " release to a band's sight of all 56, median / last band; x at: a band's sight from the launch's\n"
                " first entry)\n");
    return 0;
}
