// The v2 in_proj probe's tailhop mode (bench/probes/v2_inproj_probe.cu includes it inside its
// anonymous namespace, after the heads mode): the hand-off to the tail across clusters as tagged
// words (v2_tail_hop.cuh) beside the stream. For each group of rows, when its owners had their last
// partials (heads mode's times) and when the last of the ranks that need it saw every word with the
// step's tag; and what publishing and polling cost in_proj's end, against the same launch without.
#pragma once

// Each rank of the 12 head clusters: [rank][kTailStamps] in µs from the first entry (-1: not stamped).
std::vector<double> tail_times(Device& d) {
    std::vector<unsigned long long> h(size_t(kCtas) * kStamps);
    check(cudaMemcpy(h.data(), d.d_stamps, h.size() * 8, cudaMemcpyDeviceToHost), "stamps");
    unsigned long long t0 = ~0ull;
    for (int k = 0; k < kCtas; ++k) t0 = std::min(t0, h[size_t(k) * kStamps + kEntry]);
    std::vector<double> out;
    for (int k = 0; k < kTailHeads * kRanks; ++k)
        for (int s = 0; s < kTailStamps; ++s) {
            const unsigned long long t = h[size_t(k) * kStamps + kTail0 + s];
            out.push_back(t ? double(t - t0) / 1e3 : -1.0);
        }
    return out;
}

// Every tagged word of the S columns against proj and the launch's tag: the words that differ.
long tagged_mismatches(Device& d, int S, uint32_t tag) {
    std::vector<uint32_t> w(size_t(S) * N);
    std::vector<uint16_t> p(size_t(S) * N);
    check(cudaMemcpy(w.data(), d.d_tagged, w.size() * 4, cudaMemcpyDeviceToHost), "tagged");
    check(cudaMemcpy(p.data(), d.d_proj, p.size() * 2, cudaMemcpyDeviceToHost), "proj");
    long bad = 0;
    for (size_t i = 0; i < w.size(); ++i) bad += w[i] != (uint32_t(p[i]) | tag << 16);
    return bad;
}

// Tails 6 and 7's assembled rows of every rank of the head clusters (q, k, f_a of its head, kAssembledRows a
// column) against proj and the launch's tag: the words that differ.
long assembled_mismatches(Device& d, int S, uint32_t tag) {
    const size_t per = size_t(kShareMaxS) * kAssembledRows;
    std::vector<uint32_t> w(size_t(kTailHeads) * kRanks * per);
    std::vector<uint16_t> p(size_t(S) * N);
    check(cudaMemcpy(w.data(), d.d_assembled, w.size() * 4, cudaMemcpyDeviceToHost), "assembled");
    check(cudaMemcpy(p.data(), d.d_proj, p.size() * 2, cudaMemcpyDeviceToHost), "proj");
    long bad = 0;
    for (int k = 0; k < kTailHeads * kRanks; ++k) {
        const int h = k / kRanks, first[3] = {kRowQ + h * kHeadRows, kRowK + h * kHeadRows, kRowFa};
        for (int s = 0; s < S; ++s)
            for (int j = 0; j < kAssembledRows; ++j) {
                const int row = first[j / kHeadRows] + j % kHeadRows;
                bad += w[size_t(k) * per + size_t(s) * kAssembledRows + size_t(j)] != (uint32_t(p[size_t(s) * N + size_t(row)]) | tag << 16);
            }
    }
    return bad;
}

// One case's hop with tail setting `tail` (1 polled, 3 polled with a sleep a round, 4 polled once the
// CTA's own cluster has sent its last unit of the group, 5 by both warps together, 6 the shared poll, 7
// it in one batch: v2_inproj_kernel.cuh's Args): each group's rows in and seen (the last rank that needs
// them), medians over `reps`, printed (tails 6, 7: when the last rank had its own share too); in_proj's end with the hop,
// with the words published but not polled (2), and without (0), interleaved.
int tailhop_case(Device& d, Case c, int reps) {
    const PlanV2& plan = tables(d, c).plan;
    std::vector<std::vector<double>> in, seen;  // [group][launch]: f_a+beta, heads 0..11, g
    constexpr int kTails = 8;  // Args::tail: 0 .. 7
    std::vector<float> proj[kTails], mhz[kTails];
    std::vector<double> own;  // tails 6, 7: the last rank's own share in
    long bad = 0, bad_assembled = 0;
    const int polled = c.tail;
    for (int i = 0; i < reps; ++i) {
        for (int tail : {0, 2, polled}) {  // interleaved: without, published only, then polled
            if (tail < 0 || tail >= kTails) return 1;
            c.tail = tail;
            const Run r = run(d, c, 1);
            if (!r.ok) return 1;
            proj[tail].push_back(r.proj_us), mhz[tail].push_back(r.mhz);
        }
        bad += tagged_mismatches(d, c.S, d.last_tag);
        if (shared_poll(polled)) bad_assembled += assembled_mismatches(d, c.S, d.last_tag);
        const std::vector<double> g = group_times(d, plan), t = tail_times(d);
        std::vector<double> s(size_t(kTailHeads) + 2, 0.0);  // the last rank to see each group
        double own_last = 0.0;
        for (int k = 0; k < kTailHeads * kRanks; ++k) {
            const double* tk = &t[size_t(k) * kTailStamps];
            own_last = std::max(own_last, tk[kTailOwn]);
            s[0] = std::max(s[0], tk[kTailGate]);
            s[size_t(1 + k / kRanks)] = std::max(s[size_t(1 + k / kRanks)], tk[kTailQkv]);
            s.back() = std::max(s.back(), tk[kTailG]);
        }
        own.push_back(own_last);
        if (in.empty()) in.resize(g.size()), seen.resize(g.size());
        for (size_t k = 0; k < g.size(); ++k) in[k].push_back(g[k]), seen[k].push_back(s[k]);
    }
    std::printf("tailhop %d%s S %2d, x %s, us from the first entry (median of %d), rows in -> seen: f_a+beta %.2f -> %.2f  heads", polled,
                c.free_first ? " free first" : "", c.S, c.seam ? "seam" : "loaded", reps, median(in[0]), median(seen[0]));
    for (size_t k = 1; k + 1 < in.size(); ++k) std::printf(" %.2f->%.2f", median(in[k]), median(seen[k]));
    std::printf("  g %.2f -> %.2f  last proj %.2f (published only %.2f, without %.2f)  CTA 0's clock %.0f (%.0f, %.0f) MHz  words wrong %ld",
                median(in.back()), median(seen.back()), median(proj[polled]), median(proj[2]), median(proj[0]), median(mhz[polled]),
                median(mhz[2]), median(mhz[0]), bad);
    if (shared_poll(polled)) std::printf("  own share in %.2f  assembled wrong %ld", median(own), bad_assembled);
    std::printf("\n");
    return bad || bad_assembled ? 1 : 0;
}

int tailhop_mode(Device& d, int reps) {
    for (int S : {1, 4, 16}) {  // the mode places the tasks itself (v2_tail_hop.cuh): where the plan with the tail does
        monokda::Config c = monokda::Config::preset("k3");
        c.R = 1, c.L = S, c.slots = S + 1;
        monokda::PlanV2Params pp = monokda::PlanV2Params::for_config(c);
        pp.seam = 0, pp.tail = 1;
        const std::vector<std::string> probs = tailhop_placement_problems(monokda::PlanV2::build(c, pp));
        for (const std::string& w : probs) std::fprintf(stderr, "monokda-v2-inproj-probe: tailhop at S %d: %s\n", S, w.c_str());
        if (!probs.empty()) return 1;
    }
    seam_upload();
    int rc = 0;
    for (int S : {1, 4, 16})
        for (int seam : {0, 1})
            for (int tail : {1, 5, 6, 7, 3, 4})
                for (int free_first : {0, 1}) {
                    if (free_first && tail != 1) continue;  // the reducer's order, on the plain poll
                    Case c = seam_setting(S);
                    c.seam = seam, c.tail = tail, c.free_first = free_first;
                    if (fits(c)) rc |= tailhop_case(d, c, reps);
                    else if (shared_poll(tail)) std::printf("tailhop %d S %2d, x %s: does not fit, skipped\n", tail, S, seam ? "seam" : "loaded");
                }
    return rc;
}
