// Properties over the requests of a step: order, slot names, independence, null slots.
#include <algorithm>
#include <numeric>
#include <set>

#include "properties/check_util.hpp"
#include "properties/prop_list.hpp"
#include "properties/transforms.hpp"
#include "reference/reference.hpp"

namespace monokda::props {

using namespace detail;

namespace {

std::vector<int> shuffled(int n, Rng& rng) {
    std::vector<int> p(static_cast<size_t>(n));
    std::iota(p.begin(), p.end(), 0);
    rng.shuffle(p);
    return p;
}

// Slots a request names anywhere in its state_indices row.
std::set<int32_t> slots_of(const StepInputs& in, int r) {
    std::set<int32_t> s;
    for (int t = 0; t < in.cfg.L; ++t)
        if (in.idx(r, t) > 0) s.insert(in.idx(r, t));
    return s;
}

// Rows of every request not in `skip` equal base; every slot not in `skip_slots` equals base.
void others_unchanged(Findings& f, const StepInputs& in, const StepOutputs<float>& out, const StepOutputs<float>& base,
                      const std::set<int>& skip, const std::set<int32_t>& skip_slots) {
    const Config& c = in.cfg;
    for (int r = 0; r < c.R; ++r) {
        if (skip.count(r)) continue;
        for (int t = 0; t < c.L; ++t)
            rows_match_all(f, at(r, t), c, out, row_of(c, r, t), base, row_of(c, r, t), kAllRows, true);
    }
    for (int s = 0; s < c.slots; ++s) {
        if (skip_slots.count(s)) continue;
        conv_entries_match(f, "", in, out.conv_state, s, 0, in, base.conv_state, s, 0, c.conv_len(), true);
        ssm_slot_match(f, "", c, out.ssm_state, s, base.ssm_state, s, true);
    }
}

}  // namespace

// Permuting the requests (rows, state_indices rows, num_accepted; the slots go with them) permutes
// the row outputs and leaves the state tensors identical. Bit-exact.
Verdict prop_permutation(const Target& tg, const StepInputs& in, const StepOutputs<float>& base, uint64_t seed) {
    const Config& c = in.cfg;
    const std::string name = "permutation";
    if (c.R < 2) return skip(name, "R = 1: nothing to permute");
    Rng rng(seed);
    std::vector<int> p;
    do p = shuffled(c.R, rng); while (std::is_sorted(p.begin(), p.end()));
    const StepInputs v = select_requests(in, p);
    const StepOutputs<float> o = tg.run(v);
    Findings f(name);
    for (int i = 0; i < c.R; ++i)
        for (int t = 0; t < c.L; ++t)
            rows_match_all(f, at(i, t) + " (was request " + std::to_string(p[size_t(i)]) + ")", c, o, row_of(c, i, t), base,
                           row_of(c, p[size_t(i)], t), kAllRows, true);
    for (int s = 0; s < c.slots; ++s) {
        conv_entries_match(f, "", in, o.conv_state, s, 0, in, base.conv_state, s, 0, c.conv_len(), true);
        ssm_slot_match(f, "", c, o.ssm_state, s, base.ssm_state, s, true);
    }
    return f.verdict();
}

// Renaming the slots (a random injective map into a state about twice as large, so slots become
// sparse and strided, the gaps filled with random untouched slots) changes no row output and moves
// each slot's result with its name; the untouched new slots keep their contents. Bit-exact.
Verdict prop_slot_relabel(const Target& tg, const StepInputs& in, const StepOutputs<float>& base, uint64_t seed) {
    const Config& c = in.cfg;
    Rng rng(seed);
    const int new_slots = 2 * c.slots + 3;
    std::vector<int> pool = shuffled(new_slots - 1, rng);  // 0-based: new slot = pool[i] + 1
    std::vector<int32_t> map(size_t(c.slots));
    map[0] = 0;  // slot 0 stays the never-live slot
    for (int s = 1; s < c.slots; ++s) map[size_t(s)] = pool[size_t(s - 1)] + 1;
    const StepInputs v = relabel_slots(in, map, new_slots, rng);
    const StepOutputs<float> o = tg.run(v);
    Findings f("slot-relabel");
    for (int r = 0; r < c.R; ++r)
        for (int t = 0; t < c.L; ++t) rows_match_all(f, at(r, t), c, o, row_of(c, r, t), base, row_of(c, r, t), kAllRows, true);
    std::vector<char> mapped(size_t(new_slots), 0);
    for (int s = 0; s < c.slots; ++s) {
        const int d = map[size_t(s)];
        mapped[size_t(d)] = 1;
        conv_entries_match(f, "", v, o.conv_state, d, 0, in, base.conv_state, s, 0, c.conv_len(), true);
        ssm_slot_match(f, "", c, o.ssm_state, d, base.ssm_state, s, true);
    }
    for (int d = 0; d < new_slots; ++d) {
        if (mapped[size_t(d)]) continue;
        conv_entries_match(f, "(untouched)", v, o.conv_state, d, 0, v, v.conv_state, d, 0, c.conv_len(), true);
        ssm_slot_match(f, "(untouched)", c, o.ssm_state, d, v.ssm_state, d, true);
    }
    return f.verdict();
}

// Changing one request's inputs (its rows, its conv and initial state contents, its num_accepted)
// changes no other request's outputs and no slot it does not name. Bit-exact.
Verdict prop_independence(const Target& tg, const StepInputs& in, const StepOutputs<float>& base, uint64_t seed) {
    const Config& c = in.cfg;
    const std::string name = "independence";
    if (c.R < 2) return skip(name, "R = 1: no other request");
    Rng rng(seed);
    const int j = int(rng.below(uint64_t(c.R)));
    StepInputs v = in;
    const size_t D = size_t(c.D);
    for (int t = 0; t < c.L; ++t) {
        const size_t s = row_of(c, j, t);
        for (size_t d = 0; d < D; ++d) {
            v.prefix[s * D + d] = bf16::round(float(3 * rng.normal()));
            v.delta[s * D + d] = bf16::round(float(rng.normal()));
        }
        for (size_t d = 0; d < 8 * D; ++d) v.blocks[s * 8 * D + d] = bf16::round(float(3 * rng.normal()));
    }
    for (int32_t s : slots_of(in, j)) {
        for (int e = 0; e < c.conv_len(); ++e)
            for (int ch = 0; ch < c.C; ++ch) v.conv_state[size_t(v.conv_at(s, e, ch))] = bf16::round(float(rng.normal()));
        for (size_t i = 0; i < size_t(c.H) * c.V * c.K; ++i)
            v.ssm_state[size_t(s) * c.H * c.V * c.K + i] = float(rng.normal());
    }
    v.num_accepted[size_t(j)] = int32_t(1 + rng.below(uint64_t(c.L)));
    const StepOutputs<float> o = tg.run(v);
    Findings f(name);
    const std::set<int32_t> js = slots_of(in, j);
    others_unchanged(f, in, o, base, {j}, js);
    if (f.any()) {
        Verdict verdict = f.verdict();
        verdict.detail += " after changing request " + std::to_string(j) + "'s inputs";
        return verdict;
    }
    return f.verdict();
}

// Requests whose every slot is "none" (0 or negative) give o = +0 and core_out = step F on zeros,
// read a zero conv window, write no state, and change nothing for the other requests. Bit-exact.
Verdict prop_null_requests(const Target& tg, const StepInputs& in, const StepOutputs<float>& base, uint64_t seed) {
    const Config& c = in.cfg;
    const std::string name = "null-requests";
    std::vector<int> live;
    for (int r = 0; r < c.R; ++r)
        if (!slots_of(in, r).empty()) live.push_back(r);
    if (live.empty()) return skip(name, "every request is already null");
    Rng rng(seed);
    rng.shuffle(live);
    const size_t n = 1 + rng.below((live.size() + 1) / 2);
    std::set<int> nulled(live.begin(), live.begin() + long(n));
    std::set<int32_t> freed;
    StepInputs v = in;
    const int32_t none[3] = {0, -1, -1000};
    for (int r : nulled) {
        for (int32_t s : slots_of(in, r)) freed.insert(s);
        for (int t = 0; t < c.L; ++t) v.state_indices[row_of(c, r, t)] = none[rng.below(3)];
    }
    const StepOutputs<float> o = tg.run(v);
    Findings f(name);
    // what a null running slot must give: the conv on a zero window over the target's own proj
    std::vector<bf16> want_qkv, unused_conv;
    ref::short_conv<float>(v, o.proj, want_qkv, unused_conv);
    for (int r : nulled) {
        null_outputs(f, v, o, r);
        for (int t = 0; t < c.L; ++t) {
            const size_t s = row_of(c, r, t);
            rows_match_all(f, at(r, t) + " (nulled)", c, o, s, base, s, kStateFree, true);
            rows_match(f, "qkv " + at(r, t) + " (nulled: zero conv window)", &o.qkv[s * c.C], &want_qkv[s * c.C], c.C, true);
        }
    }
    for (int32_t s : freed) {  // the nulled requests' former slots are now untouched
        conv_entries_match(f, "(freed)", in, o.conv_state, s, 0, in, in.conv_state, s, 0, c.conv_len(), true);
        ssm_slot_match(f, "(freed)", c, o.ssm_state, s, in.ssm_state, s, true);
    }
    others_unchanged(f, in, o, base, nulled, freed);
    return f.verdict();
}

// A request with a running slot but no initial state (idx[r, a-1] <= 0): o = +0 for every token, no
// ssm_state slot written even where idx[r, t] > 0, the conv write unaffected (SPEC §3 E). Bit-exact.
Verdict prop_null_initial_state(const Target& tg, const StepInputs& in, const StepOutputs<float>& base, uint64_t seed) {
    const Config& c = in.cfg;
    const std::string name = "null-initial-state";
    std::vector<int> cand;
    for (int r = 0; r < c.R; ++r) {
        const int a = in.num_accepted[size_t(r)];
        if (a > 1 && in.idx(r, 0) > 0 && in.idx(r, a - 1) > 0) cand.push_back(r);
    }
    if (cand.empty()) return skip(name, "no request has num_accepted > 1 with a running slot and an initial state");
    Rng rng(seed);
    const int r = cand[rng.below(cand.size())];
    StepInputs v = in;
    v.state_indices[row_of(c, r, in.num_accepted[size_t(r)] - 1)] = -1;
    const StepOutputs<float> o = tg.run(v);
    Findings f(name);
    null_outputs(f, v, o, r);
    for (int t = 0; t < c.L; ++t) {
        const size_t s = row_of(c, r, t);
        rows_match_all(f, at(r, t) + " (no initial state)", c, o, s, base, s, kStateFree | kQkv, true);
    }
    std::set<int32_t> mine = slots_of(in, r);
    for (int32_t s : mine) {
        if (s == in.idx(r, 0))  // the running slot's conv write happens as before
            conv_entries_match(f, "(running slot)", in, o.conv_state, s, 0, in, base.conv_state, s, 0, c.conv_len(), true);
        else
            conv_entries_match(f, "(not written)", in, o.conv_state, s, 0, in, in.conv_state, s, 0, c.conv_len(), true);
        ssm_slot_match(f, "(no state may be written)", c, o.ssm_state, s, in.ssm_state, s, true);
    }
    others_unchanged(f, in, o, base, {r}, mine);
    return f.verdict();
}

}  // namespace monokda::props
