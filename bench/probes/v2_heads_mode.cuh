// The v2 in_proj probe's heads mode (bench/probes/v2_inproj_probe.cu includes it inside its anonymous
// namespace, after the seam mode): when each group of rows the kda tail needs is done, with the units
// in head order (core/plan_v2.hpp, v2_head_order_tiles): f_a and beta, the q, k, v rows of each head,
// g. The times bound what of the tail can run while later heads stream (docs/kernel-v2.md).
#pragma once

// A group's time in one launch: the last of its tiles' owners to have all 8 ranks' partials (the
// reducer's stamp before it sums and stores; a tile's two owners each stamp their half), from the
// first entry. Groups: 0 f_a, beta and the pad; 1 + h head h's q, k, v; 1 + H g.
std::vector<double> group_times(Device& d, const monokda::PlanV2& plan) {
    using monokda::Config, monokda::V2Unit, monokda::v2_row_head;
    std::vector<unsigned long long> h(size_t(kCtas) * kStamps);
    check(cudaMemcpy(h.data(), d.d_stamps, h.size() * 8, cudaMemcpyDeviceToHost), "stamps");
    unsigned long long t0 = ~0ull;
    for (int k = 0; k < kCtas; ++k) t0 = std::min(t0, h[size_t(k) * kStamps + kEntry]);
    const Config& cfg = plan.config();
    std::vector<unsigned long long> last(size_t(cfg.H) + 2, 0);
    for (size_t u = 0; u < plan.units.size(); ++u) {
        const V2Unit& unit = plan.units[u];
        const int in_cluster = plan.unit_in_cluster(int(u));
        if (in_cluster >= kMaxTracedUnits) continue;  // not stamped (the production plan has 7 a cluster)
        for (int t = 0; t < unit.tiles; ++t)
            for (int half = 0; half < 2; ++half) {
                const int cta = plan.cta(unit.cluster, 2 * t + half);
                const unsigned long long at = h[size_t(cta) * kStamps + kUnit0 + 4 * in_cluster + 2];
                unsigned long long& g = last[size_t(v2_row_head(cfg, unit.row0[t]) + 1)];
                g = std::max(g, at);
            }
    }
    std::vector<double> us;
    for (unsigned long long t : last) us.push_back(t ? double(t - t0) / 1e3 : -1.0);
    return us;
}

// Each group's time, the median over `reps` launches, and the last proj's, at S = 1, 4, 16 with x
// loaded and at S = 1, 4 with the seam (seam_setting's rings).
int heads_mode(Device& d, int reps) {
    seam_upload();
    for (int S : {1, 4, 16})
        for (int seam : {0, 1}) {
            Case c = seam_setting(S);
            c.seam = seam;
            if (!fits(c)) continue;
            const PlanV2& plan = tables(d, c).plan;
            std::vector<std::vector<double>> g;
            std::vector<float> proj;
            for (int i = 0; i < reps; ++i) {
                const Run r = run(d, c, 1);
                if (!r.ok) return 1;
                const std::vector<double> t = group_times(d, plan);
                if (g.empty()) g.resize(t.size());
                for (size_t k = 0; k < t.size(); ++k) g[k].push_back(t[k]);
                proj.push_back(r.proj_us);
            }
            std::printf("heads S %2d, x %s, us from the first entry (median of %d): f_a+beta %.2f  heads", S, seam ? "seam" : "loaded",
                        reps, median(g[0]));
            for (size_t k = 1; k + 1 < g.size(); ++k) std::printf(" %.2f", median(g[k]));
            std::printf("  g %.2f  last proj %.2f\n", median(g.back()), median(proj));
        }
    return 0;
}
