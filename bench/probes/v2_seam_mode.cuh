// The v2 in_proj probe's seam mode (bench/probes/v2_inproj_probe.cu includes it inside its anonymous
// namespace, after its launch harness: Device, Case, run, print_row, g_seam): kernel v2's seam
// (v2_seam.cuh) checked against the reference and timed beside the stream.
#pragma once
#include "bench/probes/v2_seam_stages.cuh"

// The seam's phases in the last launch (SeamPhase): the last CTA's end of each from the first
// entry, and each phase's own time (from the one before; the first from the CTA's own entry), the
// median over the CTAs that stamp it (only owners stamp PART in).
void seam_phases(Device& d, int S) {
    std::vector<unsigned long long> h(size_t(kCtas) * kStamps);
    check(cudaMemcpy(h.data(), d.d_stamps, h.size() * 8, cudaMemcpyDeviceToHost), "stamps");
    static const char* name[kSeamPhases + 1] = {"inputs in", "P' done", "PART sent", "PART in", "WGT in", "mixed", "MSQ sent", "MSQ in", "x"};
    unsigned long long t0 = ~0ull, last[kSeamPhases + 1] = {};
    std::vector<float> own[kSeamPhases + 1];
    for (int k = 0; k < kCtas; ++k) t0 = std::min(t0, h[size_t(k) * kStamps + kEntry]);
    for (int k = 0; k < kCtas; ++k) {
        const unsigned long long* t = &h[size_t(k) * kStamps];
        unsigned long long prev = t[kEntry];
        for (int p = 0; p <= kSeamPhases; ++p) {
            const unsigned long long at = p < kSeamPhases ? t[kSeam0 + p] : t[kXReady];
            if (!at) continue;
            last[p] = std::max(last[p], at), own[p].push_back(float(at - prev) / 1e3f), prev = at;
        }
    }
    std::printf("seam S %2d phases, us: the last CTA's from the first entry / the phase's own, median over CTAs:", S);
    for (int p = 0; p <= kSeamPhases; ++p)
        if (last[p]) std::printf("  %s %.2f / %.2f", name[p], (last[p] - t0) / 1e3, median(own[p]));
    std::printf("\n");
}

// The seam in the clusters beside the stream (v2_seam.cuh). First its results: every cluster's x
// against the reference's in kernel v1's order, bit for bit; prefix_out exact; proj from that x
// against the host's. Then x's ready time and the step's end with the seam against x loaded (ready
// at entry), at S = 1, 4, 16, on the ring in_proj's tuning chose and on a deeper one with the same
// copies in flight (which buffers more of the stream while x is computed), twice, interleaved; not
// when `timed` is false (the check alone, as a memory checker runs it).
// The seam's fixture (R 4 x L 4, nb 4) on the device, as g_seam's inputs (once a process).
const SeamFixture& seam_upload() {
    static const SeamFixture f = [] {
        SeamFixture fx = seam_fixture(4, 4, 4, 0x5eedull);
        auto up = [](const std::vector<uint16_t>& v) {
            uint16_t* p = nullptr;
            check(cudaMalloc(&p, v.size() * 2), "seam input");
            check(cudaMemcpy(p, v.data(), v.size() * 2, cudaMemcpyHostToDevice), "seam input copy");
            return p;
        };
        g_seam.prefix = up(fx.prefix), g_seam.delta = up(fx.delta), g_seam.blocks = up(fx.blocks);
        g_seam.res_norm_w = up(fx.res_norm_w), g_seam.res_proj_w = up(fx.res_proj_w), g_seam.input_norm_w = up(fx.input_norm_w);
        uint16_t* d_pout = nullptr;
        check(cudaMalloc(&d_pout, fx.prefix.size() * 2), "prefix_out");
        g_seam.prefix_out = d_pout, g_seam.nb = fx.nb, g_seam.eps = fx.eps;
        return fx;
    }();
    return f;
}

// tune's best at S (docs/results/2026-12-02-h200-v2-inproj-stream.md), entry relaxed
Case seam_setting(int S) {
    Case c{S, kKq14, S >= 16 ? 4 : 3, 4, S >= 16 ? 4 : 3, 0, 0};
    return c;
}

int seam_mode(Device& d, int reps, bool timed) {
    const SeamFixture& f = seam_upload();
    std::printf("seam: fixture R 4 x L 4, nb %d; the reference's order %s\n", f.nb, f.order.c_str());
    uint16_t* d_pout = g_seam.prefix_out;
    uint16_t* d_xout = nullptr;
    check(cudaMalloc(&d_xout, size_t(kClusters) * f.S * D * 2), "x_out");
    auto setting = seam_setting;
    int bad = 0;
    for (int S : {1, 4, 16}) {
        Case c = setting(S);
        c.seam = 1;
        if (!fits(c)) {  // the seam's shared memory beside the ring: S <= 4 (docs/kernel-v2.md), not a failure
            std::printf("  seam S %d does not fit\n", S);
            continue;
        }
        g_seam.x_out = d_xout;
        check(cudaMemset(d_xout, 0xff, size_t(kClusters) * S * D * 2), "x poison");
        check(cudaMemset(d_pout, 0xff, f.prefix.size() * 2), "prefix_out poison");
        check(cudaMemset(d.d_proj, 0xff, size_t(64) * N * 2), "proj poison");
        const bool ran = run(d, c, 1).ok;
        g_seam.x_out = nullptr;
        if (!ran) {
            std::printf("  seam S %d did not run\n", S), ++bad;
            continue;
        }
        std::vector<uint16_t> x(size_t(kClusters) * S * D), pout(size_t(S) * D), proj(size_t(S) * N);
        check(cudaMemcpy(x.data(), d_xout, x.size() * 2, cudaMemcpyDeviceToHost), "x_out");
        check(cudaMemcpy(pout.data(), d_pout, pout.size() * 2, cudaMemcpyDeviceToHost), "prefix_out");
        check(cudaMemcpy(proj.data(), d.d_proj, proj.size() * 2, cudaMemcpyDeviceToHost), "proj");
        size_t xdiff = 0, pdiff = 0, same = 0;
        for (int cl = 0; cl < kClusters; ++cl)
            for (size_t i = 0; i < size_t(S) * D; ++i) xdiff += x[size_t(cl) * S * D + i] != f.x[i];
        for (size_t i = 0; i < pout.size(); ++i) pdiff += pout[i] != f.prefix_out[i];
        const std::vector<uint16_t> xr(f.x.begin(), f.x.begin() + size_t(S) * D), want = host_proj(d.w, xr, S);
        for (size_t i = 0; i < proj.size(); ++i) same += proj[i] == want[i];
        const double ident = 100.0 * double(same) / double(proj.size());
        std::printf("  seam S %2d: x differs from the reference's in %zu of %zu elements (all %d clusters); prefix_out in %zu; "
                    "proj from it %.4f %% identical to the host's\n", S, xdiff, size_t(kClusters) * S * D, kClusters, pdiff, ident);
        bad += xdiff > 0 || pdiff > 0 || ident < 99.5;
        bad += seam_stages(d, f, c);
    }
    std::printf("seam check: %s\n", bad ? "FAIL" : "pass");
    if (!timed) return bad ? 1 : 0;
    for (int S : {1, 4, 16}) {
        Case deep = setting(S);
        deep.inflight = deep.cap(), deep.slots = 1, deep.stages = kMaxStages, deep.seam = 1;
        while (!fits(deep) && deep.stages > 3) --deep.stages;
        for (int round = 0; round < 2; ++round)
            for (Case c : {setting(S), deep}) {
                c.seam = 0, print_row("loaded", c, run(d, c, reps));
                c.seam = 1, print_row("seam", c, run(d, c, reps));
            }
        if (fits(deep)) seam_phases(d, S);
    }
    return bad ? 1 : 0;
}
