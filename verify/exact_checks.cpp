// SPEC §5's bit-exact set, one check a kind (prefix_out, the bank, the kept and the untouched conv
// entries, the untouched ssm slots, everything of a null request), and the new conv entries against
// the candidate's own proj. Only step A of the reference runs (for #1, elementwise in any order).
#include <string>
#include <vector>

#include "reference/reference.hpp"
#include "verify/check_draft.hpp"

namespace monokda::verify {

using namespace detail;

namespace {

Check prefix_out_check(const StepInputs& in, const Candidate& cand, const std::vector<bf16>& prefix_out) {
    Draft d(in.cfg, "exact.prefix_out", "exact", "prefix_out");
    const std::vector<bf16>& got = cand.out.prefix_out;
    for (size_t i = 0; i < prefix_out.size(); ++i, ++d.ck.elements)
        if (got[i].bits != prefix_out[i].bits) d.note(int64_t(i), got[i], prefix_out[i]);
    return d.exact("bf16(prefix + delta) (#1)");
}

Check blocks_check(const StepInputs& in, const Candidate& cand, const std::vector<bf16>& blocks) {
    const Config& c = in.cfg;
    Draft d(c, "exact.blocks", "exact", "blocks");
    if (!cand.has("blocks"))
        return d.not_checked("not exported (" + std::string(c.block_write ? "required on a block-write layer" : "the layer writes no block row") + ")");
    const std::vector<bf16>& got = cand.out.blocks;
    for (size_t i = 0; i < blocks.size(); ++i, ++d.ck.elements)
        if (got[i].bits != blocks[i].bits) d.note(int64_t(i), got[i], blocks[i]);
    return d.exact(c.block_write ? "row nb = prefix_out, the other rows as input" : "the bank unchanged (not a block-write layer)");
}

Check conv_kept_check(const StepInputs& in, const Candidate& cand) {
    const Config& c = in.cfg;
    Draft d(c, "exact.conv_state.kept", "exact", "conv_state");
    for (int r = 0; r < c.R; ++r) {
        const int32_t slot = in.idx(r, 0);
        if (slot <= 0) continue;
        const int a = in.num_accepted[size_t(r)];
        for (int j = 0; j < c.W - 2; ++j)
            for (int ch = 0; ch < c.C; ++ch, ++d.ck.elements) {
                const bf16 got = cand.out.conv_state[size_t(in.conv_at(slot, j, ch))],
                           want = in.conv_state[size_t(in.conv_at(slot, a + j, ch))];
                if (got.bits != want.bits) d.note(in.conv_at(slot, j, ch), got, want);
            }
    }
    return d.ck.elements ? d.exact("entries 0..W-3 of each written slot = the old entries from offset a")
                         : d.not_checked("no request has a running slot");
}

Check conv_untouched_check(const StepInputs& in, const Candidate& cand) {
    const Config& c = in.cfg;
    const std::vector<char> written = conv_written(in);
    Draft d(c, "exact.conv_state.untouched", "exact", "conv_state");
    for (int s = 0; s < c.slots; ++s) {
        if (written[size_t(s)]) continue;
        for (int j = 0; j < c.conv_len(); ++j)
            for (int ch = 0; ch < c.C; ++ch, ++d.ck.elements) {
                const size_t k = size_t(in.conv_at(s, j, ch));
                if (cand.out.conv_state[k].bits != in.conv_state[k].bits) d.note(int64_t(k), cand.out.conv_state[k], in.conv_state[k]);
            }
    }
    return d.exact("slots no request runs on, as input");
}

Check ssm_untouched_check(const StepInputs& in, const Candidate& cand) {
    const Config& c = in.cfg;
    const std::vector<char> written = ssm_written(in);
    Draft d(c, "exact.ssm_state.untouched", "exact", "ssm_state");
    const size_t per = size_t(c.H) * c.V * c.K;
    for (int s = 0; s < c.slots; ++s) {
        if (written[size_t(s)]) continue;
        for (size_t i = 0; i < per; ++i, ++d.ck.elements) {
            const size_t k = size_t(s) * per + i;
            if (!same_bits_one(cand.out.ssm_state[k], in.ssm_state[k])) d.note(int64_t(k), cand.out.ssm_state[k], in.ssm_state[k]);
        }
    }
    return d.exact("slots no live request writes (no initial state: no write), as input");
}

// o = +0 and core_out = step F on +0 for every token of a request without an initial state
Check null_requests_check(const StepInputs& in, const Candidate& cand) {
    const Config& c = in.cfg;
    const StepOutputs<float>& o = cand.out;
    int64_t elements = 0, differing = 0;
    bool any = false;
    Draft dout(c, "exact.null_requests", "exact", "o"), dcore(c, "exact.null_requests", "exact", "core_out");
    const int E = c.E();
    for (int r = 0; r < c.R; ++r) {
        if (has_initial_state(in, r)) continue;
        any = true;
        for (int t = 0; t < c.L; ++t)
            for (int e = 0; e < E; ++e) {
                const size_t k = size_t(r * c.L + t) * E + e;
                if (cand.has("o")) {
                    ++elements;
                    if (o.o[k].bits != 0) ++differing, dout.note(int64_t(k), o.o[k], bf16{});
                }
                ++elements;
                const bf16 want = bf16::from_bits(zero_core_bits(in.o_norm_w[size_t(e % c.V)]));
                if (o.core_out[k].bits != want.bits) ++differing, dcore.note(int64_t(k), o.core_out[k], want);
            }
    }
    Draft d = dout.ck.has_first ? dout : dcore;  // o first: core_out follows from it
    d.ck.tensor = "o, core_out";
    d.ck.elements = elements;
    d.ck.differing = differing;
    return any ? d.exact(std::string("requests without an initial state: ") + (cand.has("o") ? "o = +0, " : "") +
                         "core_out = step F on o = +0")
               : d.not_checked("every request has an initial state");
}

Check own_proj_check(const StepInputs& in, const Candidate& cand) {
    const Config& c = in.cfg;
    Draft d(c, "own_proj.conv_state", "own_proj", "conv_state");
    if (!cand.has("proj")) return d.not_checked("needs proj (not exported): the new entries are the candidate's own proj");
    for (int r = 0; r < c.R; ++r) {
        const int32_t slot = in.idx(r, 0);
        if (slot <= 0) continue;
        for (int t = 0; t < c.L; ++t)
            for (int ch = 0; ch < c.C; ++ch, ++d.ck.elements) {
                const int64_t k = in.conv_at(slot, c.W - 2 + t, ch);
                const bf16 got = cand.out.conv_state[size_t(k)], want = cand.out.proj[size_t(r * c.L + t) * c.N + ch];
                if (got.bits != want.bits) d.note(k, got, want);
            }
    }
    return d.ck.elements ? d.exact("new entries W-2.. of each written slot = the candidate's own proj[:, 0:C]")
                         : d.not_checked("no request has a running slot");
}

}  // namespace

std::vector<Check> exact_checks(const StepInputs& in, const Candidate& cand) {
    std::vector<bf16> prefix_out, blocks, x;
    ref::attnres<float>(in, ReductionOrder{}, prefix_out, blocks, x);  // #1 is elementwise: any order
    return {prefix_out_check(in, cand, prefix_out), blocks_check(in, cand, blocks), conv_kept_check(in, cand),
            conv_untouched_check(in, cand),         ssm_untouched_check(in, cand),  null_requests_check(in, cand),
            own_proj_check(in, cand)};
}

}  // namespace monokda::verify
