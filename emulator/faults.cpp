// Every planted fault in one place: its name and description, and where it acts (a plan edit, a
// launch choice, or a hook point that the machine or a role body calls).
#include "emulator/faults.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "emulator/machine.hpp"

namespace monokda::emu {

const std::vector<FaultInfo>& fault_list() {
    static const std::vector<FaultInfo> list = {
        {Fault::missing_xrdy, "missing_xrdy", "attn CTA 1 never stores XRDY[slice 1]"},
        {Fault::flag_before_data, "flag_before_data",
         "attn CTA 1 stores XRDY[slice 1] without release: the x stores may land after the flag"},
        {Fault::stale_epoch_tag, "stale_epoch_tag", "CTA 0 tags WGT[row 0] with the previous step's epoch"},
        {Fault::epoch_by_value, "epoch_by_value",
         "the epoch is a kernel argument captured in the graph: every replay reuses the first (runs 2 steps)"},
        {Fault::slice_off_by_one, "slice_off_by_one", "CTA 1 runs slice 2's attn instructions (ownership off by one)"},
        {Fault::x_before_flag, "x_before_flag", "the first gemv CTA reads each x slice before polling its XRDY"},
        {Fault::kda_skips_proj_wait, "kda_skips_proj_wait",
         "kda task (r 0, h 0, chunk 0) convolves without waiting for its PROJ groups"},
        {Fault::partial_counted_twice, "partial_counted_twice",
         "CTA 0's gate of row 0 sums slice 0's sum-of-squares partial twice (and slice 1's not at all)"},
        {Fault::too_few_resident, "too_few_resident", "launch with one CTA fewer co-resident than the plan needs"},
        {Fault::poll_behind_loads, "poll_behind_loads",
         "AMD in-order loads on; the first gemv CTA issues all its groups' weights before polling XRDY"},
        {Fault::wrong_accepted_window, "wrong_accepted_window",
         "request 0's kda tasks take the conv window and initial state at a wrong num_accepted"},
        {Fault::x_store_off_by_one, "x_store_off_by_one",
         "attn CTA 1's x store loop starts one column late: the first column of slice 1 is never stored"},
        {Fault::g1_share_short, "g1_share_short",
         "kda task (r 0, h 0, chunk 1) stores its share of g1 one column short (a plan with chunks a head)"},
        {Fault::gate_polls_last_partial, "gate_polls_last_partial",
         "CTA 0's gate of row 0 polls only the last source's PART of each slice, as if a slice's partials "
         "landed in the order stored (a race: only delayed visibility shows it, where the delays reorder them)",
         true},
        {Fault::g1_share_long, "g1_share_long",
         "kda task (r 0, h 0, chunk 0) stores its share of g1 one column long, the same value into chunk 1's "
         "first column (a plan with chunks a head; only the write-conflict check shows it)"},
        {Fault::kda_loads_at_start, "kda_loads_at_start",
         "AMD in-order loads on; the CTA of kda task (0, 0, 0) issues its KDA_LOAD at kernel start, before its "
         "attn role, so its attn polls sit behind those loads (often landed by then, never used)"},
        {Fault::decay_fast_exp, "decay_fast_exp",
         "kda task (r 0, h 0, chunk 0) takes its state decay as exp2(gate log2 e), as a fast exp does, where the "
         "reference takes exp(gate): an ulp here and there, inside the envelope (only the bit comparison shows it)"},
        {Fault::ring_refill_early, "ring_refill_early",
         "(--kernel v2) CTA 0's producer refills ring slot 0 with the ring's first refill without waiting on its empty "
         "barrier: consumers of the chunk before may still be reading it",
         false, 2},
        {Fault::publish_before_last_partial, "publish_before_last_partial",
         "(--kernel v2) cluster 0's owner of unit 0's first rows arms its receive barrier for one partial fewer: it "
         "sums and stores the rows before the last partial has landed",
         false, 2},
        {Fault::recv_slot_reused, "recv_slot_reused",
         "(--kernel v2) CTA 1's tile-0 sender sends into a receive slot's second use without waiting on its free "
         "barrier: its owners may not have summed the first",
         false, 2},
        {Fault::missing_cluster_barrier, "missing_cluster_barrier",
         "(--kernel v2) cluster 0's entry barrier is a CTA barrier: a peer may send to an owner's barrier before "
         "the owner has made it",
         false, 2},
        {Fault::seam_part_short, "seam_part_short",
         "(--kernel v2) cluster 0's rank 0, the owner of row 0, arms its seam part barrier one sender's partials short: "
         "its GATE may take the softmax before the last partials have landed",
         false, 2},
        {Fault::x_before_seam, "x_before_seam",
         "(--kernel v2) CTA 0's consumer 0 starts in_proj without waiting on the seam's x barrier: it may multiply an x "
         "the seam has not stored",
         false, 2},
        {Fault::seam_wgt_dropped, "seam_wgt_dropped",
         "(--kernel v2) cluster 0's rank 0 GATE never sends its rows' weights to rank 1: rank 1's MIX waits for bytes "
         "that never come (a hang)",
         false, 2},
        {Fault::tail_word_unwaited, "tail_word_unwaited",
         "(--kernel v2 --tail) task 0's POLL reads the words of its first receive entry without polling them until they carry "
         "the step's tag: it may take the step before's values",
         false, 2},
        {Fault::tail_stale_tag, "tail_stale_tag",
         "(--kernel v2 --tail) the owner of receive entry 0 publishes its rows with the step before's tag: every task that "
         "polls them waits for words that never come (a hang)",
         false, 2},
        {Fault::tail_onrm_unwaited, "tail_onrm_unwaited",
         "(--kernel v2 --tail) CTA 0's last NORM sums its pair's partial Σō² without waiting on its onrm barrier: a partial "
         "may not have landed (an earlier NORM is ordered after its peers' REC by the later pairs' waits)",
         false, 2},
        {Fault::tail_decay_unwaited, "tail_decay_unwaited",
         "(--kernel v2 --tail) task 0's REC runs the recurrence without waiting on its decay barrier: a peer's decays "
         "(its share of the head's keys) may not have landed",
         false, 2},
    };
    return list;
}

const char* to_string(Fault f) {
    if (f == Fault::none) return "none";
    for (const auto& i : fault_list())
        if (i.fault == f) return i.name;
    return "?";
}

Fault parse_fault(const std::string& name) {
    if (name == "none") return Fault::none;
    std::string known;
    for (const auto& i : fault_list()) {
        if (name == i.name) return i.fault;
        known += std::string(known.empty() ? "" : ", ") + i.name;
    }
    bad_input("unknown fault '" + name + "' (known: " + known + "; --list-faults describes them)");
}

// ---------------------------------------------------------------- plan faults
Plan apply_plan_fault(const Plan& plan, Fault f) {
    Plan p = plan;
    if ((f == Fault::g1_share_short || f == Fault::g1_share_long) && p.n_chunks() < 2)
        bad_input(std::string("fault ") + to_string(f) +
                  " needs a plan with chunks a head (this step runs one kda task a head)");
    if (f == Fault::slice_off_by_one) {
        if (p.n_attn() < 3) bad_input("fault slice_off_by_one needs at least 3 attn slices");
        const auto& l = p.instrs(1);
        for (int i = 0; i < int(l.size()); ++i) {
            Instr in = l[size_t(i)];
            if (in.opcode() == Op::ATTN_PART || in.opcode() == Op::ATTN_MIX || in.opcode() == Op::ATTN_X) {
                in.a = 2;
                p.set_instr(1, i, in);
            }
        }
    } else if (f == Fault::poll_behind_loads) {
        // move every GEMV_PREFETCH of the first gemv CTA to the front of its list
        const int cta = p.n_attn_ctas();
        std::vector<Instr> pre;
        for (int i = int(p.instrs(cta).size()) - 1; i >= 0; --i)
            if (p.instrs(cta)[size_t(i)].opcode() == Op::GEMV_PREFETCH) {
                pre.insert(pre.begin(), p.instrs(cta)[size_t(i)]);
                p.erase_instr(cta, i);
            }
        if (pre.size() < 2) bad_input("fault poll_behind_loads needs a gemv CTA with two groups or more (fewer blocks)");
        for (size_t i = 0; i < pre.size(); ++i) p.insert_instr(cta, int(i), pre[i]);
    } else if (f == Fault::kda_loads_at_start) {
        // task (0, 0, 0)'s KDA_LOAD to the front of its CTA's list, ahead of the CTA's other role
        const int cta = p.kda_cta(0, 0, 0);
        if (cta < 0) bad_input("fault kda_loads_at_start needs a plan that runs kda task (0, 0, 0)");
        const auto& l = p.instrs(cta);
        int at = -1;
        for (int i = 0; i < int(l.size()); ++i)
            if (l[size_t(i)].opcode() == Op::KDA_LOAD && l[size_t(i)].a == 0 && l[size_t(i)].b == 0 && l[size_t(i)].c == 0) at = i;
        bool polls_before = false;
        for (int i = 0; i < at; ++i) polls_before |= !p.waits(cta, i).empty();
        if (!polls_before) bad_input("fault kda_loads_at_start needs kda task (0, 0, 0) on a CTA that polls before it");
        const Instr load = l[size_t(at)];
        p.erase_instr(cta, at);
        p.insert_instr(cta, 0, load);
    }
    return p;
}

PlanV2 apply_v2_plan_fault(const PlanV2& plan, Fault f) {
    PlanV2 p = plan;
    if (f == Fault::publish_before_last_partial) {
        for (V2Recv& e : p.recvs)
            if (e.unit == p.cluster_first[0] && e.owner == 0) e.bytes -= p.partial_bytes();
    } else if (f == Fault::missing_cluster_barrier) {
        p.barriers[size_t(p.barrier_index(0, V2Point::entry))].scope = 1;
    } else if (f == Fault::seam_part_short && p.has_seam()) {
        p.seam_ctas[0].part_bytes -= p.seam_part_bytes(p.seam_ctas[0].rows_owned);
    }
    return p;
}

// ---------------------------------------------------------------- launch
int FaultHooks::launches(int steps) const { return std::max(steps, fault == Fault::epoch_by_value ? 2 : 1); }
int FaultHooks::resident(int resident, int need) const { return fault == Fault::too_few_resident ? need - 1 : resident; }
bool FaultHooks::amd_in_order_loads(bool asked) const {
    return asked || fault == Fault::poll_behind_loads || fault == Fault::kda_loads_at_start;
}
void FaultHooks::require_kernel(int kernel) const {
    if (fault == Fault::none) return;
    for (const auto& i : fault_list())
        if (i.fault == fault && i.kernel != kernel)
            bad_input(std::string("fault ") + i.name + " is planted in kernel v" + std::to_string(i.kernel) + "'s emulation" +
                      (i.kernel == 2 ? " (monokda emulate --kernel v2)" : " (monokda emulate without --kernel v2)"));
}
void FaultHooks::require(const Config& cfg) const {
    require_kernel(1);
    if (fault == Fault::wrong_accepted_window && cfg.L < 2) bad_input("fault wrong_accepted_window needs L >= 2");
}

// ---------------------------------------------------------------- machine loop
uint32_t FaultHooks::kernel_epoch(uint32_t launcher_epoch, uint32_t first_epoch) const {
    return fault == Fault::epoch_by_value ? first_epoch : launcher_epoch;
}
bool FaultHooks::uses_slice_before_poll(const Plan& plan, int cta, const Instr& in) const {
    return fault == Fault::x_before_flag && in.opcode() == Op::GEMV_GROUP && cta == plan.n_attn_ctas();
}
bool FaultHooks::skips_waits(const Instr& in) const {
    return fault == Fault::kda_skips_proj_wait && in.opcode() == Op::KDA_CONV && in.a == 0 && in.b == 0 && in.c == 0;
}
bool FaultHooks::skips_wait(const Plan& plan, const Instr& in, const MailboxRef& e) const {
    if (fault != Fault::gate_polls_last_partial || in.opcode() != Op::ATTN_GATE || in.a != 0 || e.box != Mailbox::PART)
        return false;
    const int nb = plan.config().nb, src = e.entry / plan.n_attn() % (nb + 1);  // PART [row][src][slice]
    return src < nb;
}

// ---------------------------------------------------------------- attn bodies
void FaultHooks::gate_partials(int cta, int row, int src, std::vector<MailboxRef>& used) const {
    if (fault == Fault::partial_counted_twice && cta == 0 && row == 0 && src == 0 && used.size() >= 2) used[1] = used[0];
}
uint32_t FaultHooks::wgt_tag(int cta, int row, uint32_t epoch) const {
    return fault == Fault::stale_epoch_tag && cta == 0 && row == 0 ? prev_epoch(epoch) : epoch;
}
int FaultHooks::x_store_first(int cta, int d0) const { return fault == Fault::x_store_off_by_one && cta == 1 ? d0 + 1 : d0; }
bool FaultHooks::stores_xrdy(int cta) const { return !(fault == Fault::missing_xrdy && cta == 1); }
bool FaultHooks::xrdy_release(int cta) const { return !(fault == Fault::flag_before_data && cta == 1); }

// ---------------------------------------------------------------- kda bodies
int FaultHooks::accepted(int r, int a, int L) const {
    return fault == Fault::wrong_accepted_window && r == 0 ? a % L + 1 : a;
}
int FaultHooks::g1_share(int r, int h, int ch, int share) const {
    if (fault == Fault::g1_share_short && r == 0 && h == 0 && ch == 1) return share - 1;
    if (fault == Fault::g1_share_long && r == 0 && h == 0 && ch == 0) return share + 1;
    return share;
}
bool FaultHooks::fast_exp_decay(int r, int h, int ch) const {
    return fault == Fault::decay_fast_exp && r == 0 && h == 0 && ch == 0;
}

// ---------------------------------------------------------------- kernel v2's roles
bool FaultHooks::skips_empty_wait(int cta, int chunk, int depth) const {
    return fault == Fault::ring_refill_early && cta == 0 && chunk == depth;
}
bool FaultHooks::skips_free_wait(int cta, int warp, int use) const {
    return fault == Fault::recv_slot_reused && cta == 1 && warp == 0 && use == 1;
}
bool FaultHooks::skips_x_wait(int cta, int warp) const { return fault == Fault::x_before_seam && cta == 0 && warp == 0; }
bool FaultHooks::drops_seam_send(int cluster, int from, int to, int bar) const {
    return fault == Fault::seam_wgt_dropped && cluster == 0 && from == 0 && to == 1 && bar == int(V2SeamBar::wgt);
}
bool FaultHooks::skips_words_wait(int task, int wait) const { return fault == Fault::tail_word_unwaited && task == 0 && wait == 0; }
bool FaultHooks::publishes_stale_tag(int entry) const { return fault == Fault::tail_stale_tag && entry == 0; }
bool FaultHooks::skips_onrm_wait(int cta, bool last) const { return fault == Fault::tail_onrm_unwaited && cta == 0 && last; }
bool FaultHooks::skips_decay_wait(int task) const { return fault == Fault::tail_decay_unwaited && task == 0; }

}  // namespace monokda::emu
