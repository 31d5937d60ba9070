// The seam's stages checked one by one (v2_seam.cuh), for the seam mode (v2_seam_mode.cuh includes
// it; the probe's harness: Device, Case, run, g_seam). One launch with the dump on: every CTA's seam
// memory as it stands once x is in (the inputs as copied, P' in place, wq, the gain, the owner's
// partials, the weights, Σmixed², 1/rms, mixed); the host computes each from the fixture in the
// seam's own order (seam_expected: core/seam_stages.hpp) and counts, per stage, the CTAs and values
// that differ: the first stage wrong is where the fault is.
#pragma once
#include <cstdlib>
#include <cstring>
#include <string>

namespace seam_stages_detail {

float bf(uint16_t b) { return monokda::bf16::from_bits(b).to_float(); }
uint32_t fbits(float f) { return monokda::f32_bits(f); }

struct Tally {  // one stage: values compared, values and CTAs that differ, the first difference
    const char* name;
    size_t n = 0, bad = 0;
    int ctas = 0, first_cta = -1, first_i = -1;
    double got = 0, want = 0;
    bool cta_bad = false;
    void see(int cta, int i, double g, double w, bool differ) {
        ++n;
        if (!differ) return;
        if (!bad) first_cta = cta, first_i = i, got = g, want = w;
        ++bad, cta_bad = true;
    }
    void end_cta() { ctas += cta_bad, cta_bad = false; }
    void print() const {
        std::printf("    %-8s %zu of %zu differ on %d CTAs", name, bad, n, ctas);
        if (bad) std::printf("; first: CTA %d index %d: %.9g, expected %.9g", first_cta, first_i, got, want);
        std::printf("\n");
    }
};

}  // namespace seam_stages_detail

// One launch of case c (c.seam set) with the dump; each stage's differences printed; 0 if none.
int seam_stages(Device& d, const SeamFixture& f, const Case& c) {
    using namespace seam_stages_detail;
    const int S = c.S, nb = f.nb, src = nb + 1;
    const SeamSmem L = SeamSmem::layout(Smem::layout(nt_for(S), c.chunk(), c.stages, c.slots).bytes, S, nb);
    const int per = L.dump_bytes();
    unsigned char* d_dump = nullptr;
    check(cudaMalloc(&d_dump, size_t(kCtas) * per), "seam dump");
    check(cudaMemset(d_dump, 0xff, size_t(kCtas) * per), "seam dump poison");
    g_seam.dump = d_dump;
    const bool ran = run(d, c, 1).ok;
    g_seam.dump = nullptr;
    std::vector<unsigned char> h(size_t(kCtas) * per);
    check(cudaMemcpy(h.data(), d_dump, h.size(), cudaMemcpyDeviceToHost), "seam dump back");
    check(cudaFree(d_dump), "seam dump free");
    if (!ran) return 1;
    if (const char* to = std::getenv("SEAM_DUMP")) {  // the raw dump, for a closer look on the host
        const std::string path = std::string(to) + "-S" + std::to_string(S) + ".bin";
        if (FILE* o = std::fopen(path.c_str(), "wb")) std::fwrite(h.data(), 1, h.size(), o), std::fclose(o);
    }
    const monokda::SeamStages e = seam_expected(f, S, kSliceW);
    size_t xhost = 0;  // the host's chain against the reference: the stage check's own check
    for (size_t i = 0; i < e.x.size(); ++i) xhost += e.x[i].bits != f.x[i];
    Tally t[] = {{"gains"}, {"P'"}, {"delta"}, {"bank"}, {"wq, gain"}, {"PART"}, {"WGT"}, {"MSQ"}, {"1/rms"}, {"mixed"}};
    for (int cta = 0; cta < kCtas; ++cta) {
        const int rank = cta % kRanks, c0 = rank * kSliceCols;
        const unsigned char* base = h.data() + size_t(cta) * per - L.gains;
        auto u16 = [&](int off, size_t i) { uint16_t v; std::memcpy(&v, base + off + 2 * i, 2); return v; };
        auto f32 = [&](int off, size_t i) { float v; std::memcpy(&v, base + off + 4 * i, 4); return v; };
        auto same16 = [&](Tally& ty, int off, size_t i, uint16_t want) { const uint16_t g = u16(off, i); ty.see(cta, int(i), bf(g), bf(want), g != want); };
        auto same32 = [&](Tally& ty, int off, size_t i, float want) { const float g = f32(off, i); ty.see(cta, int(i), g, want, fbits(g) != fbits(want)); };
        for (int k = 0; k < kSliceCols; ++k) {
            same16(t[0], L.gains, k, f.res_norm_w[c0 + k]), same16(t[0], L.gains, kSliceCols + k, f.res_proj_w[c0 + k]);
            same16(t[0], L.gains, 2 * kSliceCols + k, f.input_norm_w[c0 + k]);
            same32(t[4], L.wq, k, bf(f.res_norm_w[c0 + k]) * bf(f.res_proj_w[c0 + k]));
            same32(t[4], L.nw, k, bf(f.input_norm_w[c0 + k]));
        }
        for (int s = 0; s < S; ++s) {
            for (int k = 0; k < kSliceCols; ++k) {
                same16(t[1], L.prefix, size_t(s) * L.row_h + k, f.prefix_out[size_t(s) * D + c0 + k]);
                same16(t[2], L.delta, size_t(s) * L.row_h + k, f.delta[size_t(s) * D + c0 + k]);
                for (int i = 0; i < nb; ++i)
                    same16(t[3], L.bank, (size_t(s) * nb + i) * L.row_h + k, f.blocks[(size_t(s) * 8 + i) * D + c0 + k]);
                same32(t[9], L.mixed, L.mixed_at(s, k), e.mixed[size_t(s) * D + c0 + k]);
            }
            if (s % kRanks == rank)  // the owner's partials
                for (int i = 0; i < src; ++i)
                    for (int j = 0; j < 2 * kSlices; ++j)
                        same32(t[5], L.part, ((size_t(s / kRanks) * src + i) * 2 * kSlices) + j, e.part[(size_t(s) * src + i) * kSlices * 2 + j]);
            for (int i = 0; i < nb + 2; ++i) same32(t[6], L.wgt, size_t(s) * (nb + 2) + i, e.wgt[size_t(s) * (nb + 2) + i]);
            for (int j = 0; j < kSlices; ++j) same32(t[7], L.msq, size_t(s) * kSlices + j, e.msq[size_t(s) * kSlices + j]);
            same32(t[8], L.rr, s, e.rr[s]);
        }
        for (Tally& ty : t) ty.end_cta();
    }
    std::printf("  seam S %2d stages (every CTA's seam memory at x ready; the host's chain differs from the reference's x in %zu of %zu):\n",
                S, xhost, e.x.size());
    size_t bad = 0;
    for (const Tally& ty : t) ty.print(), bad += ty.bad;
    return bad ? 1 : 0;
}
