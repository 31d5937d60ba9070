// One step's tensors in device memory (bench/device_step.cuh): filling the buffers with a step's
// values on the device, and the views the unfused chain and the benchmark harness take.
#include "bench/device_step.cuh"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace monokda::bench {

StepDims make_dims(const Config& c) {
    if (c.K != 128 || c.V != 128)
        bad_input("the unfused GPU chain is built for head dims K = V = 128 (got K = " + std::to_string(c.K) +
                  ", V = " + std::to_string(c.V) + ")");
    if (c.W != 4) bad_input("the unfused GPU chain is built for conv width W = 4 (got " + std::to_string(c.W) + ")");
    if (c.C != 3 * c.E()) bad_input("conv channels C must be 3E");
    if (c.D % 256 != 0 || c.D > 7168) bad_input("the unfused GPU seam needs D a multiple of 256, at most 7168");
    if (c.F % 8 != 0 || c.N % 8 != 0) bad_input("F and N must be multiples of 8 (16-byte rows for cuBLASLt)");
    if (c.nb < 1 || c.nb > 8) bad_input("nb must be in 1..8");
    if (c.block_write && c.nb > 7) bad_input("a block-write layer writes bank row nb, so it needs nb <= 7");
    if (c.L < 1 || c.L > 8) bad_input("L must be in 1..8");
    if (c.R < 1) bad_input("R must be >= 1");
    StepDims d{};
    d.D = c.D; d.H = c.H; d.K = c.K; d.V = c.V; d.F = c.F; d.N = c.N; d.C = c.C; d.W = c.W; d.E = c.E();
    d.nb = c.nb; d.R = c.R; d.L = c.L; d.S = c.S();
    d.block_write = c.block_write ? 1 : 0;
    d.conv_ds = c.conv_layout == ConvLayout::ds ? 1 : 0;
    d.conv_len = c.conv_len();
    d.conv_slot_stride = int64_t(c.conv_len()) * c.C;
    d.ssm_slot_stride = int64_t(c.H) * c.V * c.K;
    d.eps = float(c.eps);
    d.l2eps = float(c.l2_eps);
    d.lb = float(c.lower_bound);
    d.kscale = float(std::pow(double(c.K), -0.5));  // as the reference computes it: in double, then rounded
    d.col_g2 = c.col_g2();
    d.col_fa = c.col_fa();
    d.col_beta = c.col_beta();
    return d;
}

namespace {

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
// uniform in [-1, 1): standard deviation 1/sqrt(3)
__device__ __forceinline__ float hash_uniform(uint64_t seed, uint64_t i) {
    return float(int64_t(mix64(seed * 0x9e3779b97f4a7c15ull + i) >> 40) - (int64_t(1) << 23)) * (1.0f / 8388608.0f);
}

__global__ void fill_bf16(bf16* p, size_t n, uint64_t seed, float mean, float sd) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        p[i] = bf16::round(mean + 1.7320508f * sd * hash_uniform(seed, i));
}
__global__ void fill_f32(float* p, size_t n, uint64_t seed, float mean, float sd) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        p[i] = mean + 1.7320508f * sd * hash_uniform(seed, i);
}

template <class T>
void fill(const DeviceBuffer<T>& b, uint64_t seed, float mean, float sd) {
    const int blocks = int(std::min<size_t>(4096, (b.size() + 255) / 256));
    if constexpr (std::is_same_v<T, bf16>) fill_bf16<<<blocks, 256>>>(b.get(), b.size(), seed, mean, sd);
    else fill_f32<<<blocks, 256>>>(b.get(), b.size(), seed, mean, sd);
    MONOKDA_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

DeviceStepSet::DeviceStepSet(const Config& m, const SetCapacity& cap) : model_(m), cap_(cap) {
    const size_t rows = size_t(cap.rows), D = size_t(m.D), E = size_t(m.E());
    prefix_ = DeviceBuffer<bf16>(rows * D);
    delta_ = DeviceBuffer<bf16>(rows * D);
    blocks_ = DeviceBuffer<bf16>(rows * 8 * D);
    res_norm_w_ = DeviceBuffer<bf16>(D);
    res_proj_w_ = DeviceBuffer<bf16>(D);
    input_norm_w_ = DeviceBuffer<bf16>(D);
    in_proj_w_ = DeviceBuffer<bf16>(size_t(m.N) * D);
    f_b_w_ = DeviceBuffer<bf16>(E * size_t(m.F));
    o_norm_w_ = DeviceBuffer<bf16>(size_t(m.V));
    conv_state_ = DeviceBuffer<bf16>(size_t(cap.slots) * size_t(cap.conv_len) * size_t(m.C));
    prefix_out_ = DeviceBuffer<bf16>(rows * D);
    x_ = DeviceBuffer<bf16>(rows * D);
    proj_ = DeviceBuffer<bf16>(rows * size_t(m.N));
    g1_ = DeviceBuffer<bf16>(rows * E);
    qkv_ = DeviceBuffer<bf16>(rows * size_t(m.C));
    o_ = DeviceBuffer<bf16>(rows * E);
    core_out_ = DeviceBuffer<bf16>(rows * E);
    conv_w_ = DeviceBuffer<float>(size_t(m.C) * size_t(m.W));
    A_log_ = DeviceBuffer<float>(size_t(m.H));
    dt_bias_ = DeviceBuffer<float>(E);
    ssm_state_ = DeviceBuffer<float>(size_t(cap.slots) * size_t(m.H) * size_t(m.V) * size_t(m.K));
    state_indices_ = DeviceBuffer<int32_t>(rows);
    num_accepted_ = DeviceBuffer<int32_t>(size_t(cap.requests));
}

StepPtrs DeviceStepSet::ptrs() const {
    StepPtrs p;
    p.prefix = prefix_.get(); p.delta = delta_.get(); p.blocks = blocks_.get();
    p.res_norm_w = res_norm_w_.get(); p.res_proj_w = res_proj_w_.get(); p.input_norm_w = input_norm_w_.get();
    p.in_proj_w = in_proj_w_.get(); p.f_b_w = f_b_w_.get(); p.o_norm_w = o_norm_w_.get();
    p.conv_w = conv_w_.get(); p.A_log = A_log_.get(); p.dt_bias = dt_bias_.get();
    p.conv_state = conv_state_.get(); p.ssm_state = ssm_state_.get();
    p.state_indices = state_indices_.get(); p.num_accepted = num_accepted_.get();
    p.prefix_out = prefix_out_.get(); p.x = x_.get(); p.proj = proj_.get(); p.g1 = g1_.get();
    p.qkv = qkv_.get(); p.o = o_.get(); p.core_out = core_out_.get();
    return p;
}

size_t DeviceStepSet::bytes() const {
    size_t b = 0;
    for (const auto* x : {&prefix_, &delta_, &blocks_, &res_norm_w_, &res_proj_w_, &input_norm_w_, &in_proj_w_,
                          &f_b_w_, &o_norm_w_, &conv_state_, &prefix_out_, &x_, &proj_, &g1_, &qkv_, &o_, &core_out_})
        b += x->bytes();
    for (const auto* x : {&conv_w_, &A_log_, &dt_bias_, &ssm_state_}) b += x->bytes();
    return b + state_indices_.bytes() + num_accepted_.bytes();
}

void DeviceStepSet::fill_random(uint64_t seed) {
    const Config& m = model_;
    uint64_t s = seed * 1000;
    // the fixture generator's scales (core/fixture_gen.cpp), uniform instead of normal
    fill(prefix_, ++s, 0, 1);
    fill(delta_, ++s, 0, 0.5f);
    fill(blocks_, ++s, 0, 1);
    fill(res_norm_w_, ++s, 1, 0.1f);
    fill(res_proj_w_, ++s, 0, float(1 / std::sqrt(double(m.D))));
    fill(input_norm_w_, ++s, 1, 0.1f);
    fill(in_proj_w_, ++s, 0, float(1 / std::sqrt(double(m.D))));
    fill(f_b_w_, ++s, 0, float(1 / std::sqrt(double(m.F))));
    fill(o_norm_w_, ++s, 1, 0.1f);
    fill(conv_state_, ++s, 0, 1);
    fill(conv_w_, ++s, 0, float(1 / std::sqrt(double(m.W))));
    fill(A_log_, ++s, -0.5f, 0.866f);  // uniform in (-2, 1)
    fill(dt_bias_, ++s, 0, 0.5f);
    fill(ssm_state_, ++s, 0, 0.1f);
    // outputs and hand-offs too, so that nothing reads uninitialised memory in a partial chain
    for (const auto* b : {&prefix_out_, &x_, &proj_, &g1_, &qkv_, &o_, &core_out_}) fill(*b, ++s, 0, 1);
    MONOKDA_CUDA_CHECK(cudaDeviceSynchronize());
}

void DeviceStepSet::set_step(const Config& step, uint64_t seed) {
    if (step.S() > cap_.rows || step.R > cap_.requests || step.S() + 1 > cap_.slots || step.conv_len() > cap_.conv_len)
        bad_input("step R=" + std::to_string(step.R) + " L=" + std::to_string(step.L) + " does not fit the benchmark buffers");
    std::vector<int32_t> idx(size_t(step.S())), acc(size_t(step.R));
    for (int i = 0; i < step.S(); ++i) idx[size_t(i)] = 1 + i;  // request r, token t: slot 1 + r·L + t
    Rng rng(seed);
    for (auto& a : acc) a = int32_t(1 + rng.below(uint64_t(step.L)));
    state_indices_.upload(idx);
    num_accepted_.upload(acc);
}

void DeviceStepSet::upload(const StepInputs& in) {
    const Config& c = in.cfg;
    if (c.S() > cap_.rows || c.R > cap_.requests || c.slots > cap_.slots || c.conv_len() > cap_.conv_len)
        bad_input("fixture does not fit the device buffers");
    prefix_.upload(in.prefix); delta_.upload(in.delta); blocks_.upload(in.blocks);
    res_norm_w_.upload(in.res_norm_w); res_proj_w_.upload(in.res_proj_w); input_norm_w_.upload(in.input_norm_w);
    in_proj_w_.upload(in.in_proj_w); f_b_w_.upload(in.f_b_w); o_norm_w_.upload(in.o_norm_w);
    conv_w_.upload(in.conv_w); A_log_.upload(in.A_log); dt_bias_.upload(in.dt_bias);
    conv_state_.upload(in.conv_state); ssm_state_.upload(in.ssm_state);
    state_indices_.upload(in.state_indices); num_accepted_.upload(in.num_accepted);
}

StepOutputs<float> DeviceStepSet::download(const Config& c) const {
    StepOutputs<float> o;
    const size_t S = size_t(c.S()), D = size_t(c.D), E = size_t(c.E());
    o.prefix_out = prefix_out_.download(S * D);
    o.blocks = blocks_.download(S * 8 * D);
    o.core_out = core_out_.download(S * E);
    o.conv_state = conv_state_.download(size_t(c.slots) * size_t(c.conv_len()) * size_t(c.C));
    o.ssm_state = ssm_state_.download(size_t(c.slots) * size_t(c.H) * size_t(c.V) * size_t(c.K));
    o.x = x_.download(S * D);
    o.proj = proj_.download(S * size_t(c.N));
    o.g1 = g1_.download(S * E);
    o.qkv = qkv_.download(S * size_t(c.C));
    o.o = o_.download(S * E);
    return o;
}

}  // namespace monokda::bench
