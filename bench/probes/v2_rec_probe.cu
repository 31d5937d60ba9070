// monokda-v2-rec-probe: kernel v2's recurrence step on a register tile, idle and beside the stream.
//
// A warpgroup holds 32 state rows × 128 keys of one head in registers: thread (warp w, lane l) has row
// 8w + l/4 and keys 32c .. 32c + 31, c = l % 4. A token: decay every key column, kS = Σ_k S·k̂ (each
// thread's 32 products in a pairwise tree, then a butterfly over the row's 4 lanes: exactly the
// reference's pairwise order over 128 terms, products rounded before they are added, as the
// reference's -ffp-contract=off computes them), u = (v − kS)·β, S += u·k̂, o = Σ_k S·q̂ the same way,
// o rounded to bf16 (#6); optionally the state stored (the 16 KB tile, one 16-byte store a thread a
// key quad, streaming). The per-token vectors sit in shared memory, swizzled so the row's 4 lanes read
// distinct banks. 120 CTAs (15 clusters of 8, v2's footprint) each run one tile; beside the stream,
// warp 0 of every CTA streams through the copy engine into a ring (16 KB chunks, 8 in flight) as v2's
// producers will. Reports the median over CTAs of the time a token, idle and beside the stream, with
// and without the state store.
// Usage: monokda-v2-rec-probe [LAUNCHES]
#include "kernels/vendor/gpu.hpp"
#include "kernels/vendor/cluster.hpp"

#include "bench/probe_util.hpp"
#include "bench/probes/probe_wait.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

namespace probe = monokda::probe;
using probe::median;
using namespace monokda::gpu;

constexpr int kRanks = 8, kClusters = 15, kCtas = kRanks * kClusters, kThreads = 384;
constexpr int kK = 128, kRows = 32, kTokens = 8, kRounds = 64;  // a step's L = 8 tokens, 64 times over
constexpr int kChunk = 16384, kStages = 8;
constexpr int kVecBytes = kTokens * 3 * kK * 4;  // decay, k̂, q̂ a token
constexpr int kVrowFloats = kTokens * kRows + kTokens;  // v a row a token, then β a token
constexpr int kSmem = kStages * kChunk + kVecBytes + kVrowFloats * 4;
constexpr size_t kStreamBytes = size_t(2) << 30;
constexpr size_t kPerCta = kStreamBytes / kCtas / kChunk * kChunk;  // a CTA's part, chunk-aligned

void check(cudaError_t e, const char* what) { probe::check("monokda-v2-rec-probe", e, what); }

struct Args {
    const unsigned char* buf;
    const float* vecs;      // [kTokens][3][kK], swizzled (host)
    const float* vrows;     // [kTokens][kRows] values, and β at [kTokens * kRows + t]
    float* states;          // [kCtas][kRows][kK] per token (overwritten), when store
    uint16_t* o;            // [kCtas][kTokens][kRows]
    float* ns_per_token;    // [kCtas]
    uint32_t* stop;
    int stream, store;
};

// Sum of a thread's 32 terms in a pairwise tree (terms 2i, 2i+1 first), as pair_sum orders them.
__device__ __forceinline__ float tree32(const float (&p)[32]) {
    float a[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) a[i] = __fadd_rn(p[2 * i], p[2 * i + 1]);
#pragma unroll
    for (int i = 0; i < 8; ++i) a[i] = __fadd_rn(a[2 * i], a[2 * i + 1]);
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = __fadd_rn(a[2 * i], a[2 * i + 1]);
    return __fadd_rn(__fadd_rn(a[0], a[1]), __fadd_rn(a[2], a[3]));
}
// The row's 4 lanes: (c0 + c1) + (c2 + c3).
__device__ __forceinline__ float across4(float v) {
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

__global__ void __cluster_dims__(kRanks, 1, 1) __launch_bounds__(kThreads, 1) rec(const Args a) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ uint64_t full[kStages], empty[kStages];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int cta = int(cluster_id()) * kRanks + int(cluster_rank());
    float* vec = reinterpret_cast<float*>(smem + kStages * kChunk);
    float* vrow = vec + kTokens * 3 * kK;
    for (int i = threadIdx.x; i < kTokens * 3 * kK; i += kThreads) vec[i] = a.vecs[i];
    for (int i = threadIdx.x; i < kVrowFloats; i += kThreads) vrow[i] = a.vrows[i];
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 1), mbar_init(&empty[s], 1);
        mbar_init_fence();
    }
    __syncthreads();
    if (warp == 0 && a.stream) {
        if (lane == 0) {
            const unsigned char* src = a.buf + kPerCta * size_t(cta);
            const int per_cta = int(kPerCta / kChunk);
            const uint64_t policy = l2_policy(true);
            int j = 0;
            for (bool stop = false; !stop; ++j) {
                const int s = j % kStages;
                if (j >= kStages)
                    while (!mbar_try_wait(&empty[s], uint32_t(j / kStages - 1) & 1u))
                        if ((stop = ld_relaxed32(a.stop) != 0)) break;
                if (stop || (j % kStages == 0 && ld_relaxed32(a.stop))) break;
                mbar_arrive_expect(&full[s], kChunk);
                bulk_copy_1d(smem + size_t(s) * kChunk, src + size_t(j % per_cta) * kChunk, kChunk, &full[s], policy);
            }
            for (int k = j > kStages ? j - kStages : 0; k < j; ++k)
                probe::spin([&] { return mbar_try_wait(&full[k % kStages], uint32_t(k / kStages) & 1u); });
        }
    } else if (warp == 4 && a.stream) {
        for (int j = 0;; ++j) {
            bool stop = false;
            while (!mbar_try_wait(&full[j % kStages], uint32_t(j / kStages) & 1u))
                if ((stop = ld_relaxed32(a.stop) != 0)) break;
            if (stop) break;
            if (lane == 0) mbar_arrive(&empty[j % kStages]);
        }
    } else if (warp >= 8) {  // the recurrence warpgroup
        const int t128 = threadIdx.x - 256, row = t128 / 4, c = t128 % 4;
        float S[32];
#pragma unroll
        for (int j = 0; j < 32; ++j) S[j] = 0.f;
        float* st = a.states + (size_t(cta) * kRows + row) * kK + 32 * c;
        // thread c's keys 32c + 4i .. + 3 sit at quad (8c + (i ^ c)) of a vector
        auto load = [&](const float* v, float (&out)[32]) {
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const float4 q = *reinterpret_cast<const float4*>(v + 4 * (8 * c + (i ^ c)));
                out[4 * i] = q.x, out[4 * i + 1] = q.y, out[4 * i + 2] = q.z, out[4 * i + 3] = q.w;
            }
        };
        asm volatile("bar.sync 3, 128;" ::: "memory");
        const unsigned long long t0 = now_ns();
        for (int round = 0; round < kRounds; ++round)
            for (int t = 0; t < kTokens; ++t) {
                float dec[32], kh[32], qh[32], p[32];
                load(vec + (t * 3 + 0) * kK, dec), load(vec + (t * 3 + 1) * kK, kh), load(vec + (t * 3 + 2) * kK, qh);
                const float v = vrow[t * kRows + row], beta = vrow[kTokens * kRows + t];
#pragma unroll
                for (int j = 0; j < 32; ++j) S[j] = __fmul_rn(S[j], dec[j]), p[j] = __fmul_rn(S[j], kh[j]);
                const float u = __fmul_rn(__fsub_rn(v, across4(tree32(p))), beta);
#pragma unroll
                for (int j = 0; j < 32; ++j) S[j] = __fadd_rn(S[j], __fmul_rn(u, kh[j])), p[j] = __fmul_rn(S[j], qh[j]);
                const float o = across4(tree32(p));
                if (c == 0) {
                    const uint32_t b = __float_as_uint(o);
                    a.o[(size_t(cta) * kTokens + t) * kRows + row] = uint16_t((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
                }
                if (a.store)
#pragma unroll
                    for (int i = 0; i < 8; ++i) st_state_f4(st + 4 * i, S[4 * i], S[4 * i + 1], S[4 * i + 2], S[4 * i + 3]);
            }
        asm volatile("bar.sync 3, 128;" ::: "memory");
        if (t128 == 0) {
            a.ns_per_token[cta] = float(now_ns() - t0) / float(kRounds * kTokens);
            if (cta == 0) st_release(a.stop, 1u);  // not ordered with the others: they all finish at about once
        }
    }
    __syncthreads();
    cluster_sync();
}

}  // namespace

int main(int argc, char** argv) {
    const int launches = argc > 1 ? std::atoi(argv[1]) : 10;
    check(cudaSetDevice(0), "device");
    // inputs: decays in (0.9, 1), unit k̂ and q̂·K^-½, v in (-1, 1), β in (0.2, 0.8): a bounded recurrence
    std::vector<float> vec(size_t(kTokens) * 3 * kK), vr(size_t(kTokens) * kRows + kTokens);
    uint64_t s = 88172645463325252ull;
    auto uni = [&] { s ^= s << 13, s ^= s >> 7, s ^= s << 17; return float(s >> 40) / float(1 << 24); };
    for (int t = 0; t < kTokens; ++t) {
        float nk = 0, nq = 0, kv[kK], qv[kK];
        for (int k = 0; k < kK; ++k) kv[k] = uni() * 2 - 1, qv[k] = uni() * 2 - 1, nk += kv[k] * kv[k], nq += qv[k] * qv[k];
        for (int k = 0; k < kK; ++k) {  // stored swizzled: key k = 32c + 4i + e at quad 8c + (i ^ c)
            const int c = k / 32, i = (k % 32) / 4, e = k % 4, at = 4 * (8 * c + (i ^ c)) + e;
            vec[(t * 3 + 0) * kK + at] = 0.9f + 0.1f * uni();
            vec[(t * 3 + 1) * kK + at] = kv[k] / std::sqrt(nk);
            vec[(t * 3 + 2) * kK + at] = qv[k] / std::sqrt(nq) / std::sqrt(float(kK));
        }
        for (int r = 0; r < kRows; ++r) vr[size_t(t) * kRows + r] = uni() * 2 - 1;
        vr[size_t(kTokens) * kRows + t] = 0.2f + 0.6f * uni();
    }
    unsigned char* buf;
    float *d_vec, *d_vr, *d_states, *d_ns;
    uint16_t* d_o;
    uint32_t* d_stop;
    check(cudaMalloc(&buf, kStreamBytes), "stream buffer"), check(cudaMemset(buf, 1, kStreamBytes), "fill");
    check(cudaMalloc(&d_vec, vec.size() * 4), "vec"), check(cudaMalloc(&d_vr, vr.size() * 4), "v");
    check(cudaMemcpy(d_vec, vec.data(), vec.size() * 4, cudaMemcpyHostToDevice), "vec copy");
    check(cudaMemcpy(d_vr, vr.data(), vr.size() * 4, cudaMemcpyHostToDevice), "v copy");
    check(cudaMalloc(&d_states, size_t(kCtas) * kRows * kK * 4), "states");
    check(cudaMalloc(&d_o, size_t(kCtas) * kTokens * kRows * 2), "o");
    check(cudaMalloc(&d_ns, kCtas * 4), "ns"), check(cudaMalloc(&d_stop, 4), "stop");
    check(cudaFuncSetAttribute(rec, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem), "smem attr");
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(kCtas), cfg.blockDim = dim3(kThreads), cfg.dynamicSmemBytes = kSmem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative, attr[0].val.cooperative = 1;
    cfg.attrs = attr, cfg.numAttrs = 1;
    std::printf("monokda-v2-rec-probe: ns a token on a 32x128 register tile (median over %d CTAs, %d launches)\n", kCtas,
                launches);
    std::vector<uint16_t> o_first;
    for (int store = 0; store < 2; ++store)
        for (int stream = 0; stream < 2; ++stream) {
            std::vector<float> med, worst;
            for (int l = 0; l < launches + 1; ++l) {
                check(cudaMemset(d_stop, 0, 4), "stop clear");
                Args a{buf, d_vec, d_vr, d_states, d_o, d_ns, d_stop, stream, store};
                check(cudaLaunchKernelEx(&cfg, rec, a), "launch");
                check(cudaDeviceSynchronize(), "kernel");
                std::vector<float> ns(kCtas);
                check(cudaMemcpy(ns.data(), d_ns, kCtas * 4, cudaMemcpyDeviceToHost), "ns");
                std::vector<uint16_t> o(size_t(kCtas) * kTokens * kRows);
                check(cudaMemcpy(o.data(), d_o, o.size() * 2, cudaMemcpyDeviceToHost), "o");
                if (o_first.empty()) o_first = o;
                else if (o != o_first) std::printf("  o differs between launches: a race\n");
                if (l == 0) continue;
                med.push_back(median(ns)), worst.push_back(*std::max_element(ns.begin(), ns.end()));
            }
            std::printf("  state store %-3s  %-14s  %6.1f ns a token (slowest CTA %6.1f)\n", store ? "yes" : "no",
                        stream ? "beside stream" : "idle", median(med), median(worst));
        }
    return 0;
}
