// The v2 in_proj probe's fused mode (bench/probes/v2_inproj_probe.cu includes it inside its anonymous
// namespace, after the tailhop mode): in_proj and the plan's tail in one launch (Args::tail
// kTailPlan), x loaded: each reducer runs the PUBLISH of every entry it sums (the rows through the
// conv, as tagged words), and warps 2-3 the CTA's kda tasks (POLL, DECAY, REC, NORM) from the plan's
// programs (warps 2-11 once the consumers are done with the stream), on the tail's buffers
// (v2_tail_device.cuh) and V2TailLayout after in_proj's memory.
// Teacher-forced: the tail's outputs of the last launch against the reference's tail made from the
// kernel's own proj, bit for bit. Timed (medians): the last proj, the last core_out and the launch's
// end, against in_proj alone before and after it; and with the tasks idle (the reducers' PUBLISH alone:
// what the PUBLISHes cost in_proj, apart from the tasks' polls), then with the PUBLISHes' bodies skipped
// (the staging alone) and with the staging skipped too; outputs not checked where the tasks are idle.
#pragma once

int fused_mode(Device& d, int reps) {
    static const char* const kIdle[] = {"the tail", "PUBLISH alone (tasks idle)", "staging alone (PUBLISH skipped)", "neither (rows copied)"};
    int bad = 0;
    for (const std::pair<int, int>& shape : std::vector<std::pair<int, int>>{{1, 1}, {1, 4}, {2, 4}, {4, 4}}) {
        const int R = shape.first, L = shape.second, S = R * L;
        TailFixture f = tail_fixture(R, L, 7);
        v2tail::Device td = v2tail::setup(f);
        g_tail = &td;
        Case alone = seam_setting(S), fused = alone;
        fused.tail = kTailPlan, fused.tail_R = R;
        if (!fits(fused)) {
            std::printf("fused R %d x L %d: %d bytes of shared memory, over the kernel's %d\n", R, L, smem_bytes(fused), kSmemMax - 4096);
            bad = 1;
            continue;
        }
        const Run a0 = run(d, alone, reps);
        for (int idle : {0, 1, 2, 3}) {
            fused.tail_idle = idle;
            std::vector<float> proj_us, end_us, after_us, dec_tok, rec_tok, staged_us, pub_mean, pub_max, first_in, first_seen;
            bool waited = true;
            auto each = [&](uint32_t tag) {  // the launch's in_proj and tail stamps
                waited &= v2tail::no_give_up(td, tag);
                std::vector<unsigned long long> h(size_t(kCtas) * kStamps), t(size_t(kCtas) * v2tail::kStamps);
                check(cudaMemcpy(h.data(), d.d_stamps, h.size() * 8, cudaMemcpyDeviceToHost), "stamps");
                check(cudaMemcpy(t.data(), td.a.stamps, t.size() * 8, cudaMemcpyDeviceToHost), "tail stamps");
                unsigned long long t0 = ~0ull, proj = 0, end = 0, dec = 0, rec = 0, recs = 0, staged = 0, pub = 0, pubm = 0, sent0 = 0, seen0 = 0;
                for (int k = 0; k < kCtas; ++k) {
                    const unsigned long long *s = &h[size_t(k) * kStamps], *u = &t[size_t(k) * v2tail::kStamps];
                    t0 = std::min(t0, s[kEntry]), proj = std::max(proj, s[kLastProj]), end = std::max(end, u[v2tail::kNormDone]);
                    dec += u[v2tail::kDecayNs], rec += u[v2tail::kRecNs], recs += u[v2tail::kRecs];
                    staged = std::max(staged, u[v2tail::kStaged]), pub += u[v2tail::kPublishNs], pubm = std::max(pubm, u[v2tail::kPublishNs]);
                    sent0 = std::max(sent0, s[kUnit0 + 1]), seen0 = std::max(seen0, s[kUnit0 + 2]);  // the CTA's first unit
                }
                if (idle) end = proj;  // no core_out: the columns after the last proj read 0
                proj_us.push_back(float(proj - t0) / 1e3f), end_us.push_back(float(end - t0) / 1e3f);
                after_us.push_back(float(static_cast<long long>(end - proj)) / 1e3f);  // the difference first: the stamps are ns since the epoch
                staged_us.push_back(float(static_cast<long long>(staged - t0)) / 1e3f), first_in.push_back(float(static_cast<long long>(sent0 - t0)) / 1e3f);
                first_seen.push_back(float(static_cast<long long>(seen0 - t0)) / 1e3f);
                pub_mean.push_back(float(pub) / float(kCtas) / 1e3f), pub_max.push_back(float(pubm) / 1e3f);
                dec_tok.push_back(recs ? float(dec) / float(recs) / float(L) / 1e3f : 0.f);
                rec_tok.push_back(recs ? float(rec) / float(recs) / float(L) / 1e3f : 0.f);
            };
            const Run r = run(d, fused, reps, each);
            if (!idle) tail_expect(f, v2tail::download(d.d_proj, size_t(S) * N));  // the last launch's proj
            const bool exact = waited && r.ok && (idle || v2tail::compare(td, f));
            std::printf("fused R %d x L %d (S %d), %s, %d warps of tail (%d once the stream is done), %d bytes of shared memory (median of %d, us from the "
                        "first entry): last proj %.2f, core_out done %.2f (%.2f after the last proj), end %.2f, launch %.2f (events); a "
                        "DECAY %.3f and a REC %.3f us a token; the tail's outputs from the kernel's proj %s\n",
                        R, L, S, kIdle[idle], kTailTeam / 32, kTailBigTeam / 32, smem_bytes(fused), reps, median(proj_us), median(end_us), median(after_us),
                        r.span_us, r.event_us, median(dec_tok), median(rec_tok),
                        !exact ? "DIFFER (above)" : idle ? "not checked" : "bit-identical to the reference's");
            std::printf("    the reducers (max over CTAs): inputs staged %.2f, the first unit's partials sent %.2f, seen %.2f; "
                        "PUBLISH %.2f us a reducer (mean), %.2f (max)\n",
                        median(staged_us), median(first_in), median(first_seen), median(pub_mean), median(pub_max));
            bad |= !exact;
        }
        const Run a1 = run(d, alone, reps);
        std::printf("fused R %d x L %d: in_proj alone, before and after: last proj %.2f / %.2f, end %.2f / %.2f, launch %.2f / %.2f (events)\n",
                    R, L, a0.proj_us, a1.proj_us, a0.span_us, a1.span_us, a0.event_us, a1.event_us);
    }
    g_tail = nullptr;
    return bad;
}
