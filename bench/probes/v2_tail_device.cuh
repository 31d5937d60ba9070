// The tail's device buffers from a fixture (v2_tail_host.hpp), shared by the tail probe (the tail
// alone, proj an input) and the in_proj probe's fused mode (proj from in_proj in the same launch):
// the inputs uploaded, the outputs blank (NaN, so that a store missed shows), and the outputs held
// bit for bit against the fixture's.
#pragma once
#include "bench/probes/probe_util.hpp"
#include "bench/probes/v2_tail_host.hpp"
#include "bench/probes/v2_tail_kernel.cuh"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace monokda::probe::v2tail {

using monokda::probe::v2::TailFixture;

inline void dev_check(cudaError_t e, const char* what) { probe::check("monokda-v2 tail", e, what); }

template <class T>
T* upload(const std::vector<T>& v) {
    T* d = nullptr;
    dev_check(cudaMalloc(&d, std::max<size_t>(v.size(), 1) * sizeof(T)), "alloc");
    if (!v.empty()) dev_check(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
    return d;
}
template <class T>
T* blank(size_t n) {
    T* d = nullptr;
    dev_check(cudaMalloc(&d, std::max<size_t>(n, 1) * sizeof(T)), "alloc");
    dev_check(cudaMemset(d, 0xff, std::max<size_t>(n, 1) * sizeof(T)), "clear");  // NaN bf16, NaN f32: a store missed shows
    return d;
}
template <class T>
std::vector<T> download(const T* d, size_t n) {
    std::vector<T> v(n);
    dev_check(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return v;
}

// Whether `got` is `want` bit for bit; if not, how many elements differ and the first, as (row, column)
// of rows `cols` wide.
template <class T>
bool same(const char* name, const std::vector<T>& got, const std::vector<T>& want, size_t cols) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < want.size(); ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0 && bad++ == 0) first = i;
    if (bad == 0) return true;
    uint32_t g = 0, w = 0;
    std::memcpy(&g, &got[first], sizeof(T)), std::memcpy(&w, &want[first], sizeof(T));
    std::printf("    %-10s %zu of %zu elements differ; the first, row %zu column %zu: 0x%x, the reference 0x%x\n", name, bad, want.size(),
                first / cols, first % cols, g, w);
    return false;
}

struct Device {
    TailArgs a{};
    size_t n_qkv, n_g1, n_conv, n_ssm;
    int smem;  // the tail's shared memory alone (V2TailLayout from 0)
};

// The fixture's inputs on the device (proj and the plan's flat table among them), its outputs blank,
// the words cleared (tag 0: no launch has published); the run settings (tag, team, delay) left 0.
inline Device setup(const TailFixture& f) {
    Device d{};
    TailArgs& a = d.a;
    int32_t* words = upload(f.words);
    a.plan.w = words;
    a.plan.at = monokda::v2_layout(monokda::read_v2_header(f.words));
    a.proj = upload(f.proj), a.conv_in = upload(f.conv_state), a.f_b_w = upload(f.f_b_w), a.o_norm_w = upload(f.o_norm_w);
    a.conv_w = upload(f.conv_w), a.A_log = upload(f.A_log), a.dt_bias = upload(f.dt_bias), a.ssm_in = upload(f.ssm_state);
    a.idx = upload(f.state_indices), a.num_acc = upload(f.num_accepted);
    d.n_qkv = f.qkv.size(), d.n_g1 = f.g1.size(), d.n_conv = f.conv_out.size(), d.n_ssm = f.ssm_out.size();
    a.conv_out = upload(f.conv_state), a.ssm_out = upload(f.ssm_state);  // entries the step does not write keep their values
    a.qkv = blank<uint16_t>(d.n_qkv), a.g1 = blank<uint16_t>(d.n_g1), a.o = blank<uint16_t>(d.n_g1), a.core_out = blank<uint16_t>(d.n_g1);
    a.words = upload(std::vector<uint32_t>(size_t(f.S) * kN, 0u));
    a.stamps = blank<unsigned long long>(size_t(120) * kStamps);
    a.error = upload(std::vector<uint32_t>(4, 0u));
    a.R = f.R, a.L = f.L, a.dims = f.dims, a.conv_len = f.conv_len, a.conv_ds = f.conv_ds ? 1 : 0;
    a.eps = f.eps, a.l2_eps = f.l2_eps, a.lb = f.lower_bound, a.k_scale = f.k_scale;
    d.smem = monokda::V2TailLayout::make(0, f.dims).bytes;
    return d;
}

// The first wait given up in the last launch (with its tag), printed; false where one was.
inline bool no_give_up(const Device& d, uint32_t tag) {
    const std::vector<uint32_t> err = download(d.a.error, 4);
    if (err[0] == kNone) return true;
    const char* what[] = {"", "its words never carried the launch's tag (entry", "a pair barrier never completed (",
                          "a row its waits do not name (row"};
    std::printf("    launch with tag %u: CTA %u, task %u: %s %d)\n", tag, err[1], err[2], what[err[0] < 4 ? err[0] : 0], int(err[3]));
    return false;
}

inline bool compare(const Device& d, const TailFixture& f) {
    const TailArgs& a = d.a;
    bool ok = same("qkv", download(a.qkv, d.n_qkv), f.qkv, kC);
    ok &= same("conv_state", download(a.conv_out, d.n_conv), f.conv_out, kC);
    ok &= same("g1", download(a.g1, d.n_g1), f.g1, kE);
    ok &= same("o", download(a.o, d.n_g1), f.o, kE);
    ok &= same("ssm_state", download(a.ssm_out, d.n_ssm), f.ssm_out, kK);
    ok &= same("core_out", download(a.core_out, d.n_g1), f.core_out, kE);
    return ok;
}

}  // namespace monokda::probe::v2tail
