// The v2 in_proj probe's check mode (bench/probes/v2_inproj_probe.cu includes it inside its anonymous
// namespace, after the harness): the kernel's counters against each setting's plan, and proj against
// an fp32 sequential host reference (teacher-forced: the same bf16 x), deterministic, and the same
// rows at every S (the GPU test v2_probe/inproj_check).
#pragma once

int check_mode(Device& d, const Case* settings) {
    // the kernel's counters against each setting's plan (tables_for holds every plan to them as it
    // builds it, so a disagreement has ended the probe before a launch on it; here it is said)
    std::printf("check: the kernel's counters against its plan's tables\n");
    for (int k = 0; k < 4; ++k) {
        if (!fits(settings[k])) continue;
        const PlanV2& p = tables(d, settings[k]).plan;
        const std::vector<std::string> walk = walk_problems(p);
        for (const std::string& w : walk) std::printf("  %s\n", w.c_str());
        if (!walk.empty()) {
            std::printf("check: FAIL: the kernel's counters part from the plan of S %d\n", settings[k].S);
            std::exit(1);
        }
        size_t chunks = 0;
        for (const auto& ch : p.chunks) chunks += ch.size();
        std::printf("  S %2d: each chunk's unit, k-steps, offset, slot and round (%zu chunks), every copy's and take's waits, "
                    "each unit's receive slot and free round (%zu partials) as the plan's\n", settings[k].S, chunks, p.partials.size());
    }
    std::printf("check: proj against an fp32 sequential host reference; the same rows at every S; twice\n");
    std::vector<uint16_t> ref = host_proj(d.w, d.x, 64), first_rows;
    int bad = 0;
    for (int k = 0; k < 4; ++k) {
        const Case& c = settings[k];
        const int S = c.S;
        check(cudaMemset(d.d_proj, 0xff, size_t(64) * N * 2), "proj poison");
        if (!run(d, c, 1).ok) { std::printf("  S %d does not fit\n", S); ++bad; continue; }
        std::vector<uint16_t> got(size_t(S) * N), again(size_t(S) * N);
        check(cudaMemcpy(got.data(), d.d_proj, got.size() * 2, cudaMemcpyDeviceToHost), "proj");
        run(d, c, 1);
        check(cudaMemcpy(again.data(), d.d_proj, again.size() * 2, cudaMemcpyDeviceToHost), "proj");
        size_t same = 0, unwritten = 0, over1 = 0;
        int maxulp = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            if (got[i] == 0xffff) ++unwritten;
            const int du = std::abs(int(int16_t(got[i])) - int(int16_t(ref[i])));
            same += du == 0, maxulp = std::max(maxulp, du), over1 += du > 1;
        }
        const bool det = got == again;
        bool inv = true;
        if (first_rows.empty()) first_rows.assign(got.begin(), got.begin() + N);
        else inv = std::equal(first_rows.begin(), first_rows.end(), got.begin());
        std::printf("  S %2d (chunk %d x %d, inflight %d, early %d, free %s): identical %.4f %%  max %d ulp (%zu over 1)  "
                    "unwritten %zu  deterministic %s  row 0 as at S 1 %s\n",
                    S, c.chunk(), c.stages, c.cap(), c.early, c.early_free ? "early" : "late", 100.0 * double(same) / double(got.size()),
                    maxulp, over1, unwritten, det ? "yes" : "NO", inv ? "yes" : "NO");
        bad += unwritten > 0 || !det || !inv || double(same) / double(got.size()) < 0.995;
    }
    std::printf("check: %s\n", bad ? "FAIL" : "pass");
    return bad ? 1 : 0;
}
