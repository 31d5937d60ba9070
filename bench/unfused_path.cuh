// The original path of SPEC §3 on the GPU as an engine ships it: six kernels, one per stage A–F,
// every hand-off a bf16 tensor in device memory. B and C go through cuBLASLt (bf16 in, f32
// accumulate, bf16 out), autotuned among the heuristic's candidates; A, D, E, F are one-pass,
// 16- or 8-byte-vectorised kernels. This is the baseline the fused kernel is measured against.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include "bench/device_step.cuh"

namespace monokda::bench {

// Stage bits for variants that run part of the chain.
enum Stage : unsigned { kStageA = 1, kStageB = 2, kStageC = 4, kStageD = 8, kStageE = 16, kStageF = 32, kAllStages = 63 };

void launch_attnres(const StepPtrs& p, const StepDims& d, cudaStream_t st);     // A
void launch_short_conv(const StepPtrs& p, const StepDims& d, cudaStream_t st);  // D
void launch_recurrence(const StepPtrs& p, const StepDims& d, cudaStream_t st);  // E
void launch_out_norm(const StepPtrs& p, const StepDims& d, cudaStream_t st);    // F

// out[rows, M] (row stride ldo) = a[rows, K] (row stride lda) · w[M, K]ᵀ through cuBLASLt.
class LtGemm {
public:
    LtGemm(cublasLtHandle_t h, int M, int K, int rows, int lda, int ldo, size_t workspace_bytes);
    ~LtGemm();
    LtGemm(const LtGemm&) = delete;
    LtGemm& operator=(const LtGemm&) = delete;

    int candidates() const { return int(algos_.size()); }
    void choose(int i) { chosen_ = i; }
    int chosen() const { return chosen_; }
    std::string describe(int i) const;
    void run(const bf16* w, const bf16* a, bf16* out, void* workspace, cudaStream_t st) const;
    void run_with(int algo, const bf16* w, const bf16* a, bf16* out, void* workspace, cudaStream_t st) const;

private:
    cublasLtHandle_t h_;
    cublasLtMatmulDesc_t op_ = nullptr;
    cublasLtMatrixLayout_t wl_ = nullptr, al_ = nullptr, ol_ = nullptr;
    size_t ws_;
    std::vector<cublasLtMatmulHeuristicResult_t> algos_;
    int chosen_ = 0;
};

class UnfusedPath {
public:
    static constexpr size_t kWorkspaceBytes = size_t(32) << 20;
    explicit UnfusedPath(const Config& step);
    ~UnfusedPath();
    UnfusedPath(const UnfusedPath&) = delete;
    UnfusedPath& operator=(const UnfusedPath&) = delete;

    const StepDims& dims() const { return d_; }
    LtGemm& in_proj() { return *gemm_b_; }
    LtGemm& f_b() { return *gemm_c_; }
    // Pick each GEMM's fastest candidate with `time_us(run_candidate)` (the harness's graph timing).
    void tune(const std::function<double(const std::function<void(int set, cudaStream_t)>&)>& time_us,
              const std::vector<StepPtrs>& sets);
    std::string algos() const;  // the chosen algorithms, for the record
    // Stage B or C alone with candidate i (tuning, and the check of every candidate).
    void run_in_proj_candidate(int i, const StepPtrs& p, cudaStream_t st) const;
    void run_f_b_candidate(int i, const StepPtrs& p, cudaStream_t st) const;

    // Enqueue the stages in `mask` (A..F in order) for one step on stream st (capturable).
    void enqueue(const StepPtrs& p, cudaStream_t st, unsigned mask = kAllStages) const;

private:
    StepDims d_;
    cublasLtHandle_t lt_ = nullptr;
    void* workspace_ = nullptr;
    LtGemm* gemm_b_ = nullptr;
    LtGemm* gemm_c_ = nullptr;
};

}  // namespace monokda::bench
