// monokda-v2-tail-probe: kernel v2's tail on the device, run from the plan's flat table
// (v2_tail_kernel.cuh), held bit for bit to the reference in the plan's order, and timed.
//
// For each shape R × L (default 1×1, 2×4, 4×4, 8×8) the host builds a verify step with the project's
// generator, kernel v2's plan with the tail (x an input), and the reference's outputs in the plan's
// order (v2_tail_host.cpp); the device gets proj and the step's inputs, and every launch publishes
// proj's rows as tagged words with its own tag (the words keep the launch before's, so each poll
// waits for its launch's), polls, shares, runs the recurrences and the gated norm. The first and the
// last launch are compared with the reference: qkv, conv_state, g1, o, ssm_state, core_out, every bit.
// Timed, from the stamps each CTA writes (the median over launches): the entry barrier to the last
// PUBLISH (the words stored), to the last POLL, REC and NORM done, a DECAY and REC's time a token, and g's last
// words stored to the last core_out, once with g among the rest and once with g published 40 µs after
// entry (after the recurrences, as in the kernel g streams last): what milestone 4 bounds.
// Each shape also counts the decays where glibc's expf is not exp in double rounded once, which the
// reference and the kernel take: where a reference on glibc's expf would part from both by an ulp.
// The seam team has 10 warps unless `team=W,...` names others (each a run of every shape): 2 is what
// an in_proj CTA has to spare for it (its warps 2-3).
// Usage: monokda-v2-tail-probe [LAUNCHES >= 2 | host] [RxL ...] [team=W,...] (host: the counts alone, no GPU).
// Exits 1 on a difference or a wait given up, 77 without an sm_90 GPU, 2 on bad arguments.
#include "bench/probes/probe_util.hpp"
#include "bench/probes/v2_tail_host.hpp"
#include "bench/probes/v2_tail_device.cuh"
#include "bench/probes/v2_tail_kernel.cuh"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

namespace probe = monokda::probe;
using namespace monokda::probe::v2tail;
using monokda::probe::v2::TailFixture;

void check(cudaError_t e, const char* what) { probe::check("monokda-v2-tail-probe", e, what); }

// One launch with tag `tag`; false (and what gave up) where a wait gave up.
bool launch(Device& d, uint32_t tag, float& ms) {
    d.a.tag = tag;
    check(cudaMemset(d.a.stamps, 0, size_t(120) * kStamps * 8), "stamps");
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(120), cfg.blockDim = dim3(32 + 32 * d.a.team_warps), cfg.dynamicSmemBytes = size_t(d.smem);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative, attr[0].val.cooperative = 1;
    cfg.attrs = attr, cfg.numAttrs = 1;
    cudaEvent_t e0, e1;
    check(cudaEventCreate(&e0), "event"), check(cudaEventCreate(&e1), "event");
    check(cudaEventRecord(e0), "record");
    check(cudaLaunchKernelEx(&cfg, tail_kernel, d.a), "launch");
    check(cudaEventRecord(e1), "record");
    check(cudaEventSynchronize(e1), "sync");
    check(cudaGetLastError(), "kernel");
    check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    return no_give_up(d, tag);
}

// `launches` launches of the shape's tail with g's rows published g_delay_ns after entry (0: with the rest).
bool run_setting(Device& d, const TailFixture& f, int launches, unsigned long long g_delay_ns, uint32_t& tag) {
    const int L = f.L;
    d.a.g_delay_ns = g_delay_ns;
    std::vector<float> ev, pub, poll, rec, norm, per_tok, dec_tok, g_end;
    bool ok = true, exact = true;  // a difference fails the shape but its times are still taken; a wait given up ends it
    for (int i = 0; i < launches && ok; ++i) {
        float ms = 0.f;
        ok = launch(d, tag, ms);
        tag = tag % 65535 + 1;  // the tags skip 0, which the words hold before the first launch
        if (ok && (i == 0 || i == launches - 1)) {
            const bool same_bits = compare(d, f);
            std::printf("    launch %d: qkv, conv_state, g1, o, ssm_state, core_out %s\n", i, same_bits ? "bit-identical to the reference" : "DIFFER");
            exact &= same_bits;
        }
        if (i == 0) continue;  // the first launch fetches the code
        const std::vector<unsigned long long> st = download(d.a.stamps, size_t(120) * kStamps);
        unsigned long long t0 = ~0ull, tp = 0, tq = 0, tr = 0, tn = 0, rec_ns = 0, recs = 0, tg = 0, dec_ns = 0;
        for (int k = 0; k < 120; ++k) {
            const unsigned long long* s = &st[size_t(k) * kStamps];
            t0 = std::min(t0, s[kEntry]), tp = std::max(tp, s[kPublished]), tq = std::max(tq, s[kPolled]);
            tr = std::max(tr, s[kRecDone]), tn = std::max(tn, s[kNormDone]), rec_ns += s[kRecNs], recs += s[kRecs], dec_ns += s[kDecayNs];
            tg = std::max(tg, s[kGStored]);
        }
        g_end.push_back(float(tn - tg) / 1000.f);
        ev.push_back(ms * 1000.f);
        pub.push_back(float(tp - t0) / 1000.f), poll.push_back(float(tq - t0) / 1000.f);
        rec.push_back(float(tr - t0) / 1000.f), norm.push_back(float(tn - t0) / 1000.f);
        per_tok.push_back(recs ? float(rec_ns) / float(recs) / float(L) / 1000.f : 0.f);
        dec_tok.push_back(recs ? float(dec_ns) / float(recs) / float(L) / 1000.f : 0.f);
    }
    if (!ok) return false;
    ok = exact;
    using probe::median;
    std::printf("    g at +%.1f us: from the entry barrier (us, median of %zu): words stored %.2f, polled %.2f, recurrences done %.2f,"
                " core_out done %.2f; g's last words stored to core_out done %.2f; a DECAY %.3f and a REC %.3f us a token (their waits"
                " included); the launch %.2f us (events)\n",
                double(g_delay_ns) / 1000.0, ev.size(), median(pub), median(poll), median(rec), median(norm), median(g_end), median(dec_tok),
                median(per_tok), median(ev));
    return ok;
}

void print_decays(const TailFixture& f) {
    std::printf("    %ld of %ld decays where glibc's expf is not exp in double rounded once (the reference's and the kernel's,"
                " docs/decisions/0023-exp-in-double.md)\n",
                f.decays_expf_differ, f.decays);
}

// The shape's tail with g among the rest, then g last (published once the recurrences are done, as
// in the kernel g streams after the last head's q, k, v).
int run_shape(int R, int L, int launches, int team_warps) {
    const TailFixture f = monokda::probe::v2::tail_fixture(R, L, 7);
    Device d = setup(f);
    d.a.team_warps = team_warps;
    check(cudaFuncSetAttribute(tail_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, d.smem), "smem attr");
    std::printf("R %d x L %d (S %d), a team of %d warps: %d tasks, %d pairs a CTA at most, %d bytes of shared memory; order %s\n", R, L,
                f.S, team_warps, int(monokda::read_v2_header(f.words).n_tasks), f.dims.pairs, d.smem, f.order.c_str());
    print_decays(f);
    uint32_t tag = 1;
    int rc = 0;
    for (unsigned long long delay : {0ull, 40000ull}) rc |= run_setting(d, f, launches, delay, tag) ? 0 : 1;
    return rc;
}

}  // namespace

int main(int argc, char** argv) {
    int launches = 20;
    std::vector<std::pair<int, int>> shapes;
    std::vector<int> teams;  // the seam team's warps, each a run of every shape
    bool bad = false;
    const bool host = argc > 1 && std::strcmp(argv[1], "host") == 0;  // the fixtures' facts alone, no GPU
    if (argc > 1 && !host) launches = std::atoi(argv[1]), bad |= launches < 2;
    for (int i = 2; i < argc && !bad; ++i) {
        int R = 0, L = 0, n = 0;
        if (std::strncmp(argv[i], "team=", 5) == 0) {
            for (const char* p = argv[i] + 5; !bad; p += n + (p[n] == ',')) {
                int w = 0;
                bad |= std::sscanf(p, "%d%n", &w, &n) != 1 || w < 1 || w > kMaxTeamWarps || (p[n] != ',' && p[n] != 0);
                if (!bad) teams.push_back(w);
                if (bad || p[n] == 0) break;
            }
            continue;
        }
        bad |= std::sscanf(argv[i], "%dx%d%n", &R, &L, &n) != 2 || argv[i][n] != 0 || R < 1 || R > 8 || L < 1 || L > kMaxL;
        shapes.push_back({R, L});
    }
    if (bad) {
        std::fprintf(stderr, "monokda-v2-tail-probe: bad arguments (usage: monokda-v2-tail-probe [LAUNCHES >= 2 | host] [RxL ...] [team=W,...], R 1..8, L 1..%d, W 1..%d)\n",
                     kMaxL, kMaxTeamWarps);
        return 2;
    }
    if (shapes.empty()) shapes = {{1, 1}, {2, 4}, {4, 4}, {8, 8}};
    if (teams.empty()) teams = {kMaxTeamWarps};
    if (host) {
        for (auto [R, L] : shapes) std::printf("R %d x L %d:\n", R, L), print_decays(monokda::probe::v2::tail_fixture(R, L, 7));
        return 0;
    }
    int count = 0, dev = 0;
    cudaDeviceProp prop{};
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 || cudaGetDeviceProperties(&prop, dev) != cudaSuccess || prop.major != 9) {
        std::fprintf(stderr, "monokda-v2-tail-probe: no sm_90 GPU: skipped\n");
        return 77;
    }
    std::printf("monokda-v2-tail-probe on %s, %d launches a shape\n", prop.name, launches);
    int rc = 0;
    for (int w : teams)
        for (auto [R, L] : shapes) rc |= run_shape(R, L, launches, w);
    return rc;
}
