// A measuring aid, not part of the build: KDA_REC's row-batch loop (kernels/kda_task.hpp, c706374)
// alone in a kernel, one head task a CTA as at 8×8 (128 state rows, 256 threads, 16-lane groups,
// two rows a batch, L tokens), its state rows in shared memory as KDA_LOAD stages them, a state
// stored a token. Times the loop per CTA with the global timer.
// Build (development machine): nvcc -O3 --fmad=false -std=c++17 -arch=sm_90a -I. \
//   docs/results/2026-12-01-h200-rec-loop-probe.cu -o rec-loop-probe
// Run: rec-loop-probe CTAS L MODE   (MODE 0: as the kernel; 1: no state stores; 2: no second sum)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include "kernels/kda_numerics.hpp"

using namespace monokda::gpu;
constexpr int K = 128, kRows = 128, kMaxL = 8, kRowBatch = 2;

struct Smem {
    float decay[kMaxL][K], k[kMaxL][K], q[kMaxL][K], vrow[kMaxL][kRows], beta[kMaxL];
    uint16_t obits[kMaxL][kRows];
    int32_t idx[kMaxL];
    float stage[kRows * K];
};

__device__ __forceinline__ void load_rows(float (&out)[kRowBatch][8], const float* rows, int vb, int n16, int k0) {
#pragma unroll
    for (int b = 0; b < kRowBatch; ++b) {
        const int v = vb + b * n16;
        float4 x0 = make_float4(0.f, 0.f, 0.f, 0.f), x1 = x0;
        if (v < kRows) {
            x0 = *reinterpret_cast<const float4*>(rows + v * K + k0);
            x1 = *reinterpret_cast<const float4*>(rows + v * K + K / 2 + k0);
        }
        out[b][0] = x0.x, out[b][1] = x0.y, out[b][2] = x0.z, out[b][3] = x0.w;
        out[b][4] = x1.x, out[b][5] = x1.y, out[b][6] = x1.z, out[b][7] = x1.w;
    }
}

template <int kMode>
__global__ void __launch_bounds__(256, 1) probe(float* states, int64_t ss, int L, unsigned long long* ns) {
    extern __shared__ __align__(16) unsigned char raw[];
    Smem& sm = *reinterpret_cast<Smem*>(raw);
    const int tid = threadIdx.x, n = blockDim.x;
    for (int i = tid; i < kMaxL * K; i += n) {
        const int t = i / K, c = i % K;
        sm.decay[t][c] = 0.99f - 0.001f * c, sm.k[t][c] = 0.01f * ((c * 7 + t) % 13), sm.q[t][c] = 0.02f * ((c * 5 + t) % 11);
        sm.vrow[t][c] = 0.1f * ((c + t) % 7);
    }
    if (tid < kMaxL) sm.beta[tid] = 0.5f, sm.idx[tid] = 1 + blockIdx.x * kMaxL + tid;
    for (int i = tid; i < kRows * K; i += n) sm.stage[i] = 0.001f * (i % 97);
    __syncthreads();
    const int g16 = tid / 16, lane = tid % 16, n16 = n / 16, k0 = lane * 4, k1 = K / 2 + k0;
    const float* st_rows = sm.stage;
    float nxt[kRowBatch][8];
    load_rows(nxt, st_rows, g16, n16, k0);
    __syncthreads();
    const unsigned long long t0 = now_ns();
#pragma unroll 1
    for (int vb = g16; vb < kRows; vb += n16 * kRowBatch) {
        float st[kRowBatch][8];
#pragma unroll
        for (int b = 0; b < kRowBatch; ++b)
            for (int i = 0; i < 8; ++i) st[b][i] = nxt[b][i];
        if (vb + n16 * kRowBatch < kRows) load_rows(nxt, st_rows, vb + n16 * kRowBatch, n16, k0);
#pragma unroll 1
        for (int t = 0; t < L; ++t) {
            uint16_t ob[kRowBatch] = {};
            float dk[8], kk[8], qq[8], part[2 * kRowBatch];
            for (int i = 0; i < 8; ++i) {
                const int col = i < 4 ? k0 + i : k1 + i - 4;
                dk[i] = sm.decay[t][col], kk[i] = sm.k[t][col], qq[i] = sm.q[t][col];
            }
#pragma unroll
            for (int b = 0; b < kRowBatch; ++b) {
                float tm[8];
                for (int i = 0; i < 8; ++i) st[b][i] = st[b][i] * dk[i];
                for (int i = 0; i < 8; ++i) tm[i] = st[b][i] * kk[i];
                part[2 * b] = pairwise4(tm[0], tm[1], tm[2], tm[3]);
                part[2 * b + 1] = pairwise4(tm[4], tm[5], tm[6], tm[7]);
            }
            pairwise_16_lanes(part);
            const float beta = sm.beta[t];
#pragma unroll
            for (int b = 0; b < kRowBatch; ++b) {
                const float kS = part[2 * b] + part[2 * b + 1];
                const float u = (sm.vrow[t][min(vb + b * n16, kRows - 1)] - kS) * beta;
                float tm[8];
                for (int i = 0; i < 8; ++i) st[b][i] = st[b][i] + u * kk[i];
                for (int i = 0; i < 8; ++i) tm[i] = st[b][i] * qq[i];
                part[2 * b] = pairwise4(tm[0], tm[1], tm[2], tm[3]);
                part[2 * b + 1] = pairwise4(tm[4], tm[5], tm[6], tm[7]);
            }
            if (kMode != 2) pairwise_16_lanes(part);
#pragma unroll
            for (int b = 0; b < kRowBatch; ++b) ob[b] = rnd(part[2 * b] + part[2 * b + 1]);
            const int slot = sm.idx[t];
            if (kMode != 1 && slot > 0) {
                float* dst = states + int64_t(slot) * ss;
#pragma unroll
                for (int b = 0; b < kRowBatch; ++b) {
                    const int v = vb + b * n16;
                    if (v >= kRows) continue;
                    float* row = dst + int64_t(v) * K;
                    st_state_f4(row + k0, st[b][0], st[b][1], st[b][2], st[b][3]);
                    st_state_f4(row + k1, st[b][4], st[b][5], st[b][6], st[b][7]);
                }
            }
            if (lane == 0)
#pragma unroll
                for (int b = 0; b < kRowBatch; ++b) {
                    const int v = vb + b * n16;
                    if (v < kRows) sm.obits[t][v] = ob[b];
                }
        }
    }
    __syncthreads();
    if (tid == 0) ns[blockIdx.x] = now_ns() - t0;
    if (tid == 0 && sm.obits[0][0] == 12345) states[0] = 1.f;  // keep the outputs live
}

int main(int argc, char** argv) {
    const int ctas = argc > 1 ? atoi(argv[1]) : 96, L = argc > 2 ? atoi(argv[2]) : 8, mode = argc > 3 ? atoi(argv[3]) : 0;
    const int64_t ss = int64_t(kRows) * K;  // one head's state a slot
    float* states;
    unsigned long long* ns;
    cudaMalloc(&states, sizeof(float) * ss * (1 + ctas * kMaxL));
    cudaMalloc(&ns, 8 * ctas);
    auto run = [&](auto kern) {
        cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(Smem)));
        std::vector<double> med;
        for (int rep = 0; rep < 7; ++rep) {
            kern<<<ctas, 256, sizeof(Smem)>>>(states, ss, L, ns);
            std::vector<unsigned long long> h(ctas);
            cudaMemcpy(h.data(), ns, 8 * ctas, cudaMemcpyDeviceToHost);
            std::sort(h.begin(), h.end());
            med.push_back(h[ctas / 2] / 1000.0);
        }
        std::sort(med.begin(), med.end());
        printf("ctas %d L %d mode %d: loop %.2f us (median CTA, median of 7 launches; min %.2f max %.2f) %s\n", ctas, L,
               mode, med[3], med[0], med[6], cudaGetErrorString(cudaGetLastError()));
    };
    if (mode == 0) run(probe<0>);
    else if (mode == 1) run(probe<1>);
    else run(probe<2>);
    return 0;
}
