// One step's tensors in device memory (SPEC §2), for the unfused chain and the benchmark harness:
// plain pointers and dims the kernels take by value, and an owning set of buffers sized for the
// largest step a run needs.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/step_ptrs.hpp"
#include "core/bf16.hpp"
#include "core/config.hpp"
#include "core/step.hpp"

namespace monokda::bench {

#define MONOKDA_CUDA_CHECK(expr) ::monokda::bench::cuda_check((expr), #expr, __FILE__, __LINE__)
inline void cuda_check(cudaError_t e, const char* what, const char* file, int line) {
    if (e != cudaSuccess)
        throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " +
                                 cudaGetErrorString(e));
}

// A non-blocking stream, destroyed with its owner.
class Stream {
public:
    Stream() { MONOKDA_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
    ~Stream() { cudaStreamDestroy(s_); }
    cudaStream_t get() const { return s_; }

private:
    cudaStream_t s_;
};

// Dims of one step as the kernels see them (ints, precomputed offsets).
struct StepDims {
    int D, H, K, V, F, N, C, W, E;
    int nb, R, L, S;
    int block_write, conv_ds, conv_len;
    int64_t conv_slot_stride, ssm_slot_stride;  // elements from one slot to the next
    float eps, l2eps, lb, kscale;
    int col_g2, col_fa, col_beta;
};
// BadInput unless cfg is the production shape the unfused kernels specialise on (K = V = 128, W = 4,
// C = 3E, D a multiple of 256 up to 7168, nb 1..8, L 1..8).
StepDims make_dims(const Config& cfg);


template <class T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t n) : n_(n) { MONOKDA_CUDA_CHECK(cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(T))); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; o.n_ = 0; }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        std::swap(p_, o.p_);
        std::swap(n_, o.n_);
        return *this;
    }
    ~DeviceBuffer() { if (p_) cudaFree(p_); }
    T* get() const { return p_; }
    size_t size() const { return n_; }
    size_t bytes() const { return n_ * sizeof(T); }
    void upload(const std::vector<T>& h) {
        if (h.size() > n_) throw std::runtime_error("upload larger than the device buffer");
        MONOKDA_CUDA_CHECK(cudaMemcpy(p_, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    }
    std::vector<T> download(size_t n) const {
        std::vector<T> h(n);
        MONOKDA_CUDA_CHECK(cudaMemcpy(h.data(), p_, n * sizeof(T), cudaMemcpyDeviceToHost));
        return h;
    }

private:
    T* p_ = nullptr;
    size_t n_ = 0;
};


// All tensors of one step: weights, states, sources, outputs and the unfused chain's hand-offs.
class DeviceStepSet {
public:
    DeviceStepSet(const Config& model, const SetCapacity& cap);
    StepPtrs ptrs() const;
    size_t bytes() const;  // device memory held

    // Benchmark contents: every tensor filled on the device from a counter-based hash with the
    // fixture generator's scales (never zeros), then the step's indices: request r's token t owns
    // slot 1 + r·L + t, num_accepted drawn in 1..L.
    void fill_random(uint64_t seed);
    void set_step(const Config& step, uint64_t seed);

    // Check mode: a fixture's tensors in, every output and hand-off out.
    void upload(const StepInputs& in);
    StepOutputs<float> download(const Config& step) const;
    std::vector<bf16> download_proj(const Config& step) const { return proj_.download(size_t(step.S()) * size_t(step.N)); }
    std::vector<bf16> download_g1(const Config& step) const { return g1_.download(size_t(step.S()) * size_t(step.E())); }

    const Config& model() const { return model_; }

private:
    Config model_;
    SetCapacity cap_;
    DeviceBuffer<bf16> prefix_, delta_, blocks_, res_norm_w_, res_proj_w_, input_norm_w_, in_proj_w_, f_b_w_,
        o_norm_w_, conv_state_, prefix_out_, x_, proj_, g1_, qkv_, o_, core_out_;
    DeviceBuffer<float> conv_w_, A_log_, dt_bias_, ssm_state_;
    DeviceBuffer<int32_t> state_indices_, num_accepted_;
};

}  // namespace monokda::bench
