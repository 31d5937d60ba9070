// Properties that tie a spec-verify step to other steps: L chained decode steps, the step after a
// full accept, and the num_accepted shift.
#include <algorithm>

#include "properties/check_util.hpp"
#include "properties/prop_list.hpp"
#include "properties/transforms.hpp"

namespace monokda::props {

using namespace detail;

namespace {

// A step with the same weights and config as `in` but R requests of one token each (L = 1, a = 1),
// request r in slot r + 1 of an (R + 1)-slot state; rows and states are filled in by the caller.
StepInputs decode_shell(const StepInputs& in, Rng& rng) {
    const Config& c = in.cfg;
    StepInputs d = in;
    d.cfg.L = 1;
    d.cfg.slots = c.R + 1;
    const size_t D = size_t(c.D);
    d.prefix.assign(size_t(c.R) * D, bf16{});
    d.delta.assign(size_t(c.R) * D, bf16{});
    d.blocks.assign(size_t(c.R) * 8 * D, bf16{});
    // slot 0 is never live: random contents catch a target that reads it anyway
    d.conv_state = random_bf16(size_t(d.cfg.slots) * d.cfg.conv_len() * c.C, rng);
    d.ssm_state.assign(size_t(d.cfg.slots) * c.H * c.V * c.K, 0.0f);
    for (size_t i = 0; i < size_t(c.H) * c.V * c.K; ++i) d.ssm_state[i] = float(rng.normal());
    d.state_indices.resize(size_t(c.R));
    d.num_accepted.assign(size_t(c.R), 1);
    for (int r = 0; r < c.R; ++r) d.state_indices[size_t(r)] = r + 1;
    return d;
}

void copy_row(const StepInputs& from, size_t fs, StepInputs& to, size_t ts) {
    const size_t D = size_t(from.cfg.D);
    std::copy_n(&from.prefix[fs * D], D, &to.prefix[ts * D]);
    std::copy_n(&from.delta[fs * D], D, &to.delta[ts * D]);
    std::copy_n(&from.blocks[fs * 8 * D], 8 * D, &to.blocks[ts * 8 * D]);
}

}  // namespace

// One step of L tokens == L chained single-token decode steps. Decode step k of request r runs token
// k's row with L = 1, a = 1 in a slot of its own whose conv_state (W-1 entries) starts as the spec
// window s[a-1 .. a+W-3] (zeros without a running slot) and whose ssm_state starts as the spec initial
// state ssm[idx[r, a-1]]; the next decode step takes both from the previous one's output, which is the
// conv-state rolling and state carrying of plain decode. Then token k's outputs equal the spec row's,
// the decode slot's ssm_state equals the spec state written at idx[r, k], and the decode conv_state
// (W-1 entries) equals spec conv_state entries k .. k+W-2 of the running slot, which covers every
// entry the spec step writes. Requests without an initial state are compared on what does not read
// the recurrence (null-requests covers the rest).
Verdict prop_spec_decode(const Target& tg, const StepInputs& in, const StepOutputs<float>& base, uint64_t seed) {
    const Config& c = in.cfg;
    Findings f("spec-decode");
    if (c.L == 1) return skip(f.verdict().check, "L = 1: the step is already a decode step");
    Rng rng(seed);
    StepInputs d = decode_shell(in, rng);
    const size_t head = size_t(c.H) * c.V * c.K;
    for (int r = 0; r < c.R; ++r) {
        const int a = in.num_accepted[size_t(r)];
        const int32_t run = in.idx(r, 0), init = in.idx(r, a - 1);
        for (int j = 0; j < c.W - 1; ++j)
            for (int ch = 0; ch < c.C; ++ch)
                d.conv_state[size_t(d.conv_at(r + 1, j, ch))] =
                    run > 0 ? in.conv_state[size_t(in.conv_at(run, a - 1 + j, ch))] : bf16{};
        if (init > 0) std::copy_n(&in.ssm_state[size_t(init) * head], head, &d.ssm_state[size_t(r + 1) * head]);
    }
    for (int k = 0; k < c.L; ++k) {
        for (int r = 0; r < c.R; ++r) copy_row(in, row_of(c, r, k), d, size_t(r));
        const StepOutputs<float> o = tg.run(d);
        for (int r = 0; r < c.R; ++r) {
            const int a = in.num_accepted[size_t(r)];
            const bool live_init = in.idx(r, a - 1) > 0;
            const std::string where = at(r, k) + " (decode step " + std::to_string(k) + ")";
            rows_match_all(f, where, c, o, size_t(r), base, row_of(c, r, k), live_init ? kAllRows : kStateFree | kQkv,
                           true);
            const int32_t slot = in.idx(r, k);
            if (live_init && slot > 0) ssm_slot_match(f, where, c, o.ssm_state, r + 1, base.ssm_state, slot, true);
            const int32_t run = in.idx(r, 0);
            if (run > 0)
                conv_entries_match(f, "after " + where, d, o.conv_state, r + 1, 0, in, base.conv_state, run, k, c.W - 1,
                                   true);
        }
        if (f.any()) break;  // later decode steps only repeat the first difference
        d.conv_state = o.conv_state;
        d.ssm_state = o.ssm_state;
    }
    return f.verdict();
}

// After a full accept (a = L) the next step continues exactly where the previous step's last token
// left off: step 1 (the base step) then step 2 (new rows, a = L, the running slot and the last
// token's slot kept, fresh slots for the other tokens) equals one step of 2L tokens whose first L
// rows are step 1's. Compared by token: step 2's token t against token L + t of the long step.
Verdict prop_continuation(const Target& tg, const StepInputs& in, const StepOutputs<float>& base, uint64_t seed) {
    const Config& c = in.cfg;
    const std::string name = "continuation";
    if (2 * c.L > 64) return skip(name, "2L exceeds the largest L (64)");
    std::vector<int> live;
    for (int r = 0; r < c.R; ++r)
        if (in.idx(r, 0) > 0 && in.idx(r, in.num_accepted[size_t(r)] - 1) > 0 && in.idx(r, c.L - 1) > 0) live.push_back(r);
    if (live.empty()) return skip(name, "no request has a running slot, an initial state and a last-token slot");
    Rng rng(seed);
    const int fresh = c.slots;  // fresh slots follow the old ones
    auto is_live = [&](int r) { return std::find(live.begin(), live.end(), r) != live.end(); };

    StepInputs s1 = in;  // step 1 is the base step with state read back from the base outputs
    s1.conv_state = base.conv_state;
    StepInputs s2 = in;
    s2.cfg.slots = c.slots + c.S();
    s2.prefix = random_bf16(in.prefix.size(), rng);
    s2.delta = random_bf16(in.delta.size(), rng, 0.5);
    s2.blocks = random_bf16(in.blocks.size(), rng);
    s2.conv_state = resize_conv_state(s1, s2.cfg, rng);
    s2.ssm_state = base.ssm_state;
    s2.ssm_state.resize(size_t(s2.cfg.slots) * c.H * c.V * c.K, 0.5f);
    for (int r = 0; r < c.R; ++r) {
        s2.num_accepted[size_t(r)] = c.L;
        for (int t = 0; t < c.L; ++t)
            s2.state_indices[row_of(c, r, t)] = !is_live(r) ? -1
                                                : t == 0     ? in.idx(r, 0)
                                                : t == c.L - 1 ? in.idx(r, c.L - 1)
                                                               : fresh + int(row_of(c, r, t));
    }
    s2.validate_step();

    StepInputs lg = in;  // the long step
    lg.cfg.L = 2 * c.L;
    lg.cfg.slots = c.slots + c.S();
    const size_t D = size_t(c.D);
    lg.prefix.resize(size_t(lg.cfg.S()) * D);
    lg.delta.resize(lg.prefix.size());
    lg.blocks.resize(lg.prefix.size() * 8);
    lg.state_indices.assign(size_t(lg.cfg.S()), -1);
    for (int r = 0; r < c.R; ++r)
        for (int t = 0; t < c.L; ++t) {
            copy_row(in, row_of(c, r, t), lg, row_of(lg.cfg, r, t));
            copy_row(s2, row_of(c, r, t), lg, row_of(lg.cfg, r, c.L + t));
            if (!is_live(r)) continue;
            lg.state_indices[row_of(lg.cfg, r, t)] = in.idx(r, t);
            lg.state_indices[row_of(lg.cfg, r, c.L + t)] = fresh + int(row_of(c, r, t));
        }
    lg.conv_state = resize_conv_state(in, lg.cfg, rng);
    lg.ssm_state = in.ssm_state;
    lg.ssm_state.resize(size_t(lg.cfg.slots) * c.H * c.V * c.K, 0.25f);
    lg.validate_step();

    const StepOutputs<float> o2 = tg.run(s2), ol = tg.run(lg);
    Findings f(name);
    for (int r : live) {
        for (int t = 0; t < c.L; ++t) {
            const std::string where = at(r, t) + " of the next step (token " + std::to_string(c.L + t) + " of the 2L step)";
            rows_match_all(f, where, c, o2, row_of(c, r, t), ol, row_of(lg.cfg, r, c.L + t), kAllRows, true);
            ssm_slot_match(f, where, c, o2.ssm_state, s2.idx(r, t), ol.ssm_state, lg.idx(r, c.L + t), true);
        }
        conv_entries_match(f, "of the next step", s2, o2.conv_state, in.idx(r, 0), 0, lg, ol.conv_state, in.idx(r, 0), c.L,
                           c.conv_len(), true);
    }
    return f.verdict();
}

// num_accepted a reads the conv window from offset a-1 and the initial state from idx[r, a-1]: the
// step equals the step where the running slot's conv_state is shifted down by a-1 entries, the
// initial state is copied into the running slot, and a = 1. Every output is bit-identical (the
// running slot is fully rewritten in both; entries shifted in from past the end are random).
Verdict prop_accepted_shift(const Target& tg, const StepInputs& in, const StepOutputs<float>& base, uint64_t seed) {
    const Config& c = in.cfg;
    const std::string name = "accepted-shift";
    Rng rng(seed);
    StepInputs v = in;
    int moved = 0;
    const size_t head = size_t(c.H) * c.V * c.K;
    for (int r = 0; r < c.R; ++r) {
        const int a = in.num_accepted[size_t(r)];
        const int32_t run = in.idx(r, 0), init = in.idx(r, a - 1);
        if (a == 1 || run <= 0 || init <= 0) continue;
        ++moved;
        for (int j = 0; j < c.conv_len(); ++j)
            for (int ch = 0; ch < c.C; ++ch)
                v.conv_state[size_t(v.conv_at(run, j, ch))] =
                    j + a - 1 < c.conv_len() ? in.conv_state[size_t(in.conv_at(run, j + a - 1, ch))]
                                             : bf16::round(float(rng.normal()));
        std::copy_n(&in.ssm_state[size_t(init) * head], head, &v.ssm_state[size_t(run) * head]);
        v.num_accepted[size_t(r)] = 1;
    }
    if (!moved) return skip(name, "no request has num_accepted > 1 with a running slot and an initial state");
    Findings f(name);
    outputs_identical(f, c, tg.run(v), base);
    return f.verdict();
}

}  // namespace monokda::props
