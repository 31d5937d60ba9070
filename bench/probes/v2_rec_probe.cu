// monokda-v2-rec-probe: kernel v2's recurrence step on a register tile, idle and beside the stream.
//
// 32 state rows × 128 keys of one head sit in registers, LANES threads a row (4: one warpgroup, 32 keys
// a thread; 8: two warpgroups, 16): thread c of a row holds keys (128/LANES)·c onwards. A token: decay
// every key column, kS = Σ_k S·k̂ (each thread's products in a pairwise tree, then a butterfly over the
// row's lanes: exactly the reference's pairwise order over 128 terms, products rounded before they are
// added, as the reference's -ffp-contract=off computes them), u = (v − kS)·β, S += u·k̂, o = Σ_k S·q̂ the
// same way, o rounded to bf16 (#6); then the state stored (none; one 16-byte streaming store a thread a
// key quad; or the 16 KB tile staged in shared memory and written by one bulk copy). The per-token
// vectors sit in shared memory, swizzled so a row's lanes read distinct banks. 48 of 120 CTAs (15
// clusters of 8, v2's footprint) run a tile each, as R = 1 has 12 heads × 4 tiles; beside the stream,
// warp 0 of every CTA streams through the copy engine into a ring (16 KB chunks, 8 in flight) as v2's
// producers will. Reports the median over the tiles of the time a token.
// Usage: monokda-v2-rec-probe [LAUNCHES]
#include "kernels/vendor/gpu.hpp"
#include "kernels/vendor/cluster.hpp"

#include "bench/probes/probe_util.hpp"
#include "bench/probes/probe_wait.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

namespace probe = monokda::probe;
using probe::median;
using namespace monokda::gpu;

constexpr int kRanks = 8, kClusters = 15, kCtas = kRanks * kClusters, kThreads = 512;
constexpr int kK = 128, kRows = 32, kTokens = 8, kRounds = 64;  // a step's L = 8 tokens, 64 times over
constexpr int kTiles = 48;  // R = 1: 12 heads × 4 tiles of 32 rows
constexpr int kChunk = 16384, kStages = 8;
constexpr int kVecFloats = kTokens * 3 * kK;            // decay, k̂, q̂ a token
constexpr int kVrowFloats = kTokens * kRows + kTokens;  // v a row a token, then β a token
constexpr int kStageBytes = kRows * kK * 4;             // one state tile
constexpr int kSmem = kStages * kChunk + kVecFloats * 4 + kVrowFloats * 4 + 2 * kStageBytes;
constexpr size_t kStreamBytes = size_t(2) << 30;
constexpr size_t kPerCta = kStreamBytes / kCtas / kChunk * kChunk;  // a CTA's part, chunk-aligned

void check(cudaError_t e, const char* what) { probe::check("monokda-v2-rec-probe", e, what); }

enum Store : int { kNoStore, kDirect, kBulk };
const char* kStoreName[] = {"none", "st.global.cs", "bulk copy"};

struct Args {
    const unsigned char* buf;
    const float* vecs;      // [kTokens][3][kK], swizzled for LANES (host)
    const float* vrows;     // [kTokens][kRows] values, and β at [kTokens * kRows + t]
    float* states;          // [kCtas][kRows][kK] per token (overwritten)
    uint16_t* o;            // [kCtas][kTokens][kRows]
    float* ns_per_token;    // [kCtas] ns, then [kCtas] SM cycles a token
    uint32_t* stop;
    int stream, store;
};

// Where key k's value sits in a per-token vector for LANES threads a row: thread c's quad q at quad
// (KP/4)·c + (q ^ (c >> shift)), so the LANES threads of a row read distinct banks.
template <int lanes>
__host__ __device__ inline int key_slot(int k) {
    const int kp = kK / lanes, c = k / kp, q = (k % kp) / 4, shift = lanes == 8 ? 1 : 0;
    return 4 * ((kp / 4) * c + (q ^ (c >> shift))) + k % 4;
}

// Sum of n = 2^m terms in a pairwise tree (terms 2i, 2i+1 first), as pair_sum orders them.
template <int n>
__device__ __forceinline__ float tree(const float (&p)[n]) {
    if constexpr (n == 1) {
        return p[0];
    } else {
        float a[n / 2];
#pragma unroll
        for (int i = 0; i < n / 2; ++i) a[i] = __fadd_rn(p[2 * i], p[2 * i + 1]);
        return tree<n / 2>(a);
    }
}
// A row's lanes: (c0 + c1) + (c2 + c3), and so on up the butterfly.
template <int lanes>
__device__ __forceinline__ float across(float v) {
#pragma unroll
    for (int m = 1; m < lanes; m *= 2) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, m));
    return v;
}

// The same butterfly through shared memory: each lane writes its partial, the row's lanes read all of
// them after a warp barrier and add them in the butterfly's order ((c0 + c1) + (c2 + c3) …).
template <int lanes>
__device__ __forceinline__ float across_smem(float v, float* xch, int lane) {
    xch[lane] = v;
    __syncwarp();
    const float* r = xch + (lane & ~(lanes - 1));
    float p[lanes];
#pragma unroll
    for (int i = 0; i < lanes; ++i) p[i] = r[i];
    return tree<lanes>(p);
}

template <int LANES, bool SMEM_REDUCE, int ROWS>
__device__ void run_tile(const Args& a, int cta, const float* vec, const float* vrow, float* stage, float* xch) {
    constexpr int KP = kK / LANES, NT = ROWS * LANES, BAR = 3;
    const int t = int(threadIdx.x) - 256, row = t / LANES, c = t % LANES, lane = t % 32;
    float* xa = xch + (t / 32) * 64;  // this warp's two exchange rows (kS, o)
    auto reduce = [&](float v, int which) {
        if constexpr (SMEM_REDUCE) return across_smem<LANES>(v, xa + 32 * which, lane);
        else return across<LANES>(v);
    };
    float S[KP];
#pragma unroll
    for (int j = 0; j < KP; ++j) S[j] = 0.f;
    float* gst = a.states + (size_t(cta) * kRows + row) * kK + KP * c;
    auto load = [&](const float* v, float (&out)[KP]) {
#pragma unroll
        for (int q = 0; q < KP / 4; ++q) {
            const float4 x = *reinterpret_cast<const float4*>(v + key_slot<LANES>(KP * c + 4 * q));
            out[4 * q] = x.x, out[4 * q + 1] = x.y, out[4 * q + 2] = x.z, out[4 * q + 3] = x.w;
        }
    };
    asm volatile("bar.sync %0, %1;" ::"n"(BAR), "n"(NT) : "memory");
    const unsigned long long t0 = now_ns();
    const long long c0 = clock64();
    int buf = 0;
    for (int round = 0; round < kRounds; ++round)
        for (int tok = 0; tok < kTokens; ++tok) {
            float dec[KP], kh[KP], qh[KP], p[KP];
            load(vec + (tok * 3 + 0) * kK, dec), load(vec + (tok * 3 + 1) * kK, kh), load(vec + (tok * 3 + 2) * kK, qh);
            const float v = vrow[tok * kRows + row], beta = vrow[kTokens * kRows + tok];
#pragma unroll
            for (int j = 0; j < KP; ++j) S[j] = __fmul_rn(S[j], dec[j]), p[j] = __fmul_rn(S[j], kh[j]);
            const float u = __fmul_rn(__fsub_rn(v, reduce(tree<KP>(p), 0)), beta);
#pragma unroll
            for (int j = 0; j < KP; ++j) S[j] = __fadd_rn(S[j], __fmul_rn(u, kh[j])), p[j] = __fmul_rn(S[j], qh[j]);
            const float o = reduce(tree<KP>(p), 1);
            if (c == 0) {
                const uint32_t b = __float_as_uint(o);
                a.o[(size_t(cta) * kTokens + tok) * kRows + row] = uint16_t((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
            }
            if (a.store == kDirect) {
#pragma unroll
                for (int q = 0; q < KP / 4; ++q) st_state_f4(gst + 4 * q, S[4 * q], S[4 * q + 1], S[4 * q + 2], S[4 * q + 3]);
            } else if (a.store == kBulk) {  // stage the tile, one thread writes it in one copy
                if (t == 0) bulk_wait_read<1>();  // the copy from this buffer two tokens ago has read it
                asm volatile("bar.sync %0, %1;" ::"n"(BAR), "n"(NT) : "memory");
                float* mine = stage + buf * (ROWS * kK) + row * kK + KP * c;
#pragma unroll
                for (int q = 0; q < KP / 4; ++q)
                    *reinterpret_cast<float4*>(mine + 4 * q) = make_float4(S[4 * q], S[4 * q + 1], S[4 * q + 2], S[4 * q + 3]);
                fence_async_proxy();
                asm volatile("bar.sync %0, %1;" ::"n"(BAR), "n"(NT) : "memory");
                if (t == 0) bulk_store_1d(a.states + size_t(cta) * kRows * kK, stage + buf * (ROWS * kK), ROWS * kK * 4), bulk_commit();
                buf ^= 1;
            }
        }
    if (t == 0 && a.store == kBulk) bulk_wait_read<0>();
    asm volatile("bar.sync %0, %1;" ::"n"(BAR), "n"(NT) : "memory");
    if (t == 0) {
        a.ns_per_token[cta] = float(now_ns() - t0) / float(kRounds * kTokens);
        a.ns_per_token[kCtas + cta] = float(clock64() - c0) / float(kRounds * kTokens);
    }
}

template <int ROWS>
__host__ __device__ constexpr int tiles_for() { return ROWS == 32 ? kTiles : 2 * kTiles; }  // R = 1's 1536 state rows

template <int LANES, bool SMEM_REDUCE, int ROWS>
__global__ void __cluster_dims__(kRanks, 1, 1) __launch_bounds__(kThreads, 1) rec(const Args a) {
    __shared__ float xch[8 * 64];  // across_smem's exchange rows, two a warp
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ uint64_t full[kStages], empty[kStages];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int cta = int(cluster_id()) * kRanks + int(cluster_rank());
    const bool tile = cta < tiles_for<ROWS>();
    float* vec = reinterpret_cast<float*>(smem + kStages * kChunk);
    float* vrow = vec + kVecFloats;
    float* stage = vrow + kVrowFloats;  // 16-byte aligned: every size before is a multiple of 16 bytes
    for (int i = threadIdx.x; i < kVecFloats; i += kThreads) vec[i] = a.vecs[i];
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
    } else if (warp >= 8 && warp < 8 + ROWS * LANES / 32 && tile) {
        run_tile<LANES, SMEM_REDUCE, ROWS>(a, cta, vec, vrow, stage, xch);
        if (threadIdx.x == 256 && cta == 0) st_release(a.stop, 1u);  // the tiles all end at about once
    }
    __syncthreads();
    cluster_sync();
}

struct Rng {  // xorshift64, uniform in [0, 1)
    uint64_t s;
    float uni() {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        return float(s >> 40) / float(1 << 24);
    }
};

// The inputs for LANES threads a row: decays in (0.9, 1), unit k̂ and q̂·K^-½, v in (-1, 1), β in
// (0.2, 0.8): a bounded recurrence.
void make_inputs(int lanes, std::vector<float>& vec, std::vector<float>& vr) {
    vec.assign(size_t(kVecFloats), 0.f), vr.assign(size_t(kVrowFloats), 0.f);
    Rng rng{88172645463325252ull};
    for (int t = 0; t < kTokens; ++t) {
        float nk = 0, nq = 0;
        std::vector<float> kv(kK), qv(kK);
        for (size_t k = 0; k < size_t(kK); ++k) {
            kv[k] = rng.uni() * 2 - 1, qv[k] = rng.uni() * 2 - 1;
            nk += kv[k] * kv[k], nq += qv[k] * qv[k];
        }
        for (int k = 0; k < kK; ++k) {
            const size_t at = size_t(lanes == 4 ? key_slot<4>(k) : key_slot<8>(k)), base = size_t(t) * 3 * kK;
            vec[base + at] = 0.9f + 0.1f * rng.uni();
            vec[base + kK + at] = kv[size_t(k)] / std::sqrt(nk);
            vec[base + 2 * kK + at] = qv[size_t(k)] / std::sqrt(nq) / std::sqrt(float(kK));
        }
        for (int r = 0; r < kRows; ++r) vr[size_t(t * kRows + r)] = rng.uni() * 2 - 1;
        vr[size_t(kTokens * kRows + t)] = 0.2f + 0.6f * rng.uni();
    }
}

template <int LANES, bool SMEM_REDUCE, int ROWS>
void measure(int launches, unsigned char* buf) {
    constexpr int tiles = tiles_for<ROWS>();
    std::vector<float> vec, vr;
    make_inputs(LANES, vec, vr);
    float *d_vec, *d_vr, *d_states, *d_ns;
    uint16_t* d_o;
    uint32_t* d_stop;
    check(cudaMalloc(&d_vec, vec.size() * 4), "vec"), check(cudaMalloc(&d_vr, vr.size() * 4), "v");
    check(cudaMemcpy(d_vec, vec.data(), vec.size() * 4, cudaMemcpyHostToDevice), "vec copy");
    check(cudaMemcpy(d_vr, vr.data(), vr.size() * 4, cudaMemcpyHostToDevice), "v copy");
    check(cudaMalloc(&d_states, size_t(kCtas) * kRows * kK * 4), "states");
    check(cudaMalloc(&d_o, size_t(kCtas) * kTokens * kRows * 2), "o");
    check(cudaMalloc(&d_ns, 2 * kCtas * 4), "ns"), check(cudaMalloc(&d_stop, 4), "stop");
    void (*kernel)(const Args) = rec<LANES, SMEM_REDUCE, ROWS>;
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem), "smem attr");
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(kCtas), cfg.blockDim = dim3(kThreads), cfg.dynamicSmemBytes = kSmem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative, attr[0].val.cooperative = 1;
    cfg.attrs = attr, cfg.numAttrs = 1;
    std::vector<uint16_t> o_first;
    for (int store = 0; store < 3; ++store)
        for (int stream = 0; stream < 2; ++stream) {
            std::vector<float> med, worst, cyc;
            for (int l = 0; l < launches + 1; ++l) {
                check(cudaMemset(d_stop, 0, 4), "stop clear");
                Args a{buf, d_vec, d_vr, d_states, d_o, d_ns, d_stop, stream, store};
                check(cudaLaunchKernelEx(&cfg, kernel, a), "launch");
                check(cudaDeviceSynchronize(), "kernel");
                std::vector<float> ns(tiles), cy(tiles);
                check(cudaMemcpy(ns.data(), d_ns, tiles * 4, cudaMemcpyDeviceToHost), "ns");
                check(cudaMemcpy(cy.data(), d_ns + kCtas, tiles * 4, cudaMemcpyDeviceToHost), "cycles");
                std::vector<uint16_t> o(size_t(tiles) * kTokens * kRows);
                check(cudaMemcpy(o.data(), d_o, o.size() * 2, cudaMemcpyDeviceToHost), "o");
                if (o_first.empty()) o_first = o;
                else if (o != o_first) std::printf("  o differs between launches: a race\n");
                if (l == 0) continue;
                med.push_back(median(ns)), worst.push_back(*std::max_element(ns.begin(), ns.end())), cyc.push_back(median(cy));
            }
            std::printf("  %2d rows, %d lanes a row %s  state store %-12s  %-14s  %6.1f ns a token (slowest tile %6.1f), %5.0f cycles\n", ROWS, LANES,
                        SMEM_REDUCE ? "(smem sums)" : "(shuffles) ", kStoreName[store], stream ? "beside stream" : "idle", median(med), median(worst), median(cyc));
        }
    check(cudaFree(d_vec), "free"), check(cudaFree(d_vr), "free"), check(cudaFree(d_states), "free");
    check(cudaFree(d_o), "free"), check(cudaFree(d_ns), "free"), check(cudaFree(d_stop), "free");
}

}  // namespace

int main(int argc, char** argv) {
    const int launches = argc > 1 ? std::atoi(argv[1]) : 10;
    check(cudaSetDevice(0), "device");
    unsigned char* buf;
    check(cudaMalloc(&buf, kStreamBytes), "stream buffer"), check(cudaMemset(buf, 1, kStreamBytes), "fill");
    std::printf("monokda-v2-rec-probe: ns a token on a register tile of 16 or 32 rows x 128 keys (median over the tiles, %d launches)\n", launches);
    measure<4, false, 32>(launches, buf);
    measure<8, true, 32>(launches, buf);
    measure<4, true, 16>(launches, buf);
    measure<8, true, 16>(launches, buf);
    return 0;
}
