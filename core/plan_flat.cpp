// The plan as the kernel reads it (core/plan.hpp, PlanHeader): the flat serialisation of the header,
// the mailboxes' sizes, each launch CTA's list offset and the instruction words, and the checked
// read of a buffer's header.
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/plan.hpp"

namespace monokda {

std::vector<int32_t> Plan::serialize() const {
    PlanHeader h{};
    h.magic = kPlanMagic;
    h.version = kPlanVersion;
    if (!team_parent_.empty()) throw std::logic_error("plan: a with_kda_teams plan is the emulator's, not a launch's");
    h.blocks = blocks();
    h.n_attn = n_attn_;
    h.attn_row_parts = attn_parts();
    h.slice_width = params_.slice_width;
    h.n_gemv = n_gemv();
    h.gemv_group_rows = params_.gemv_group_rows;
    h.n_groups = n_groups_;
    h.kda_chunk_rows = params_.kda_chunk_rows;
    h.n_chunks = n_chunks_;
    h.D = cfg_.D; h.N = cfg_.N; h.H = cfg_.H; h.K = cfg_.K; h.V = cfg_.V; h.F = cfg_.F;
    h.R = cfg_.R; h.L = cfg_.L; h.S = cfg_.S(); h.nb = cfg_.nb;
    int total = 0;
    for (const auto& l : instrs_) total += int(l.size());
    h.total_instrs = total;
    const int hw = int(sizeof(PlanHeader) / 4);
    h.total_words = kPlanCtaBeginWord + (blocks() + 1) + 4 * total;
    std::vector<int32_t> w(size_t(h.total_words));
    std::memcpy(w.data(), &h, sizeof h);
    size_t at = size_t(hw);
    for (int m = 0; m < kMailboxCount; ++m) w[at++] = entries_[m];
    for (int m = 0; m < kMailboxCount; ++m) w[at++] = words_per_entry(Mailbox(m));
    int begin = 0;  // launch CTA b's list at cta_begin[b]
    for (int b = 0; b < blocks(); ++b) { w[at++] = begin; begin += int(instrs_[size_t(list_at(b))].size()); }
    w[at++] = begin;
    for (int b = 0; b < blocks(); ++b)
        for (const Instr& in : instrs_[size_t(list_at(b))]) { w[at++] = in.op; w[at++] = in.a; w[at++] = in.b; w[at++] = in.c; }
    return w;
}

PlanHeader Plan::read_header(const std::vector<int32_t>& words) {
    PlanHeader h{};
    if (words.size() < sizeof(PlanHeader) / 4) bad_input("plan buffer shorter than its header");
    std::memcpy(&h, words.data(), sizeof h);
    if (h.magic != kPlanMagic) bad_input("plan buffer: bad magic");
    if (h.version != kPlanVersion) bad_input("plan buffer: version " + std::to_string(h.version) + " (expected " +
                                             std::to_string(kPlanVersion) + ")");
    if (h.blocks < 1 || h.total_instrs < 0 || h.total_words != int64_t(words.size()) ||
        int64_t(kPlanCtaBeginWord) + (int64_t(h.blocks) + 1) + 4 * int64_t(h.total_instrs) !=
            int64_t(h.total_words))
        bad_input("plan buffer: sizes in the header do not match its length");
    return h;
}

}  // namespace monokda
