// Planted protocol bugs (--inject NAME): each one is a mistake a mono kernel can really make, and
// each must be caught and named by the emulator. The clean plan is Fault::none.
//
// Where each fault acts is defined in one place, faults.cpp: a plan fault changes the plan's
// instruction data (apply_plan_fault), a launch fault changes how emulate launches the plan, and a
// body fault is a named hook point (FaultHooks) that the machine or a role body calls; no body tests a
// fault itself. Adding a fault: a value below, a line in fault_list(), and its hook (or plan edit).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/plan_v2.hpp"

namespace monokda::emu {

enum class Fault {
    none,
    missing_xrdy,           // attn CTA 1 never stores XRDY[slice 1]
    flag_before_data,       // attn CTA 1 stores XRDY[slice 1] with a plain store: x may land after the flag
    stale_epoch_tag,        // the gate of row 0 (CTA 0) tags WGT[row 0] with the previous step's epoch
    epoch_by_value,         // the epoch is a captured kernel argument: every graph replay reuses step 0's
    slice_off_by_one,       // CTA 1 computes slice 2 (plan operand off by one): slice 1 has no owner
    x_before_flag,          // the first gemv CTA reads a slice of x before polling its XRDY
    kda_skips_proj_wait,    // kda task (r 0, h 0, chunk 0) convolves without waiting for PROJ
    partial_counted_twice,  // the gate of row 0 sums slice 0's Σv² partial twice and drops slice 1's
    too_few_resident,       // launch with one CTA fewer co-resident than the plan needs
    poll_behind_loads,      // (AMD knob on) the first gemv CTA issues every group's weights up front
    wrong_accepted_window,  // request 0's kda tasks use another num_accepted for the conv window and state
    x_store_off_by_one,     // attn CTA 1's x store loop starts one column late: the slice's first column is never stored
    g1_share_short,         // kda task (r 0, h 0, chunk 1) stores its g1 share one column short (needs chunks)
    // each caught by one detector alone (emulator/detectors.hpp names which)
    gate_polls_last_partial,  // CTA 0's gate of row 0 polls only the last source's PART of each slice
    g1_share_long,          // kda task (r 0, h 0, chunk 0) stores its g1 share one column long, into chunk 1's
    kda_loads_at_start,     // (AMD knob on) task (0, 0, 0)'s CTA issues its KDA_LOAD before its attn role
    decay_fast_exp,         // kda task (r 0, h 0, chunk 0) takes its decay as exp2(x log2 e), not exp(x)
    // kernel v2's in_proj (emulator/v2/, monokda emulate --kernel v2), each caught by one detector
    ring_refill_early,            // CTA 0's producer refills ring slot 0 without waiting for its consumers to free it
    publish_before_last_partial,  // cluster 0's owner of unit 0's first rows arms its receive barrier one partial short
    recv_slot_reused,             // CTA 1's tile-0 sender reuses a receive slot without waiting for its free barrier
    missing_cluster_barrier,      // cluster 0's entry barrier is a CTA barrier: peers may touch barriers not yet made
    seam_part_short,              // cluster 0's rank-0 part barrier is armed one sender's partials short
    x_before_seam,                // CTA 0's consumer 0 starts in_proj without waiting for its CTA's x
    seam_wgt_dropped,             // cluster 0's rank-0 GATE never sends its weights to rank 1: its MIX never completes
    // kernel v2's tail (a plan with it)
    tail_word_unwaited,           // task 0's POLL reads the words of its first receive entry without polling them
    tail_stale_tag,               // the owner of receive entry 0 publishes its words with the step before's tag: they never come
    tail_onrm_unwaited,           // CTA 0's last NORM reads its pair's partial Σō² without waiting on its onrm barrier
    tail_decay_unwaited,          // task 0's REC runs the recurrence on the pair's decays without waiting on its decay barrier
};

struct FaultInfo {
    Fault fault;
    const char* name;
    const char* what;
    // a race: only schedules whose store delays reorder its stores show it (the others pass, rightly)
    bool race = false;
    int kernel = 1;  // the kernel whose emulation it is planted in: 1 (the plan of core/plan.hpp), 2 (core/plan_v2.hpp)
};
const std::vector<FaultInfo>& fault_list();
const char* to_string(Fault f);
Fault parse_fault(const std::string& name);  // BadInput naming the known ones

// Plan faults: the plan as the faulty kernel would run it (changes instruction data).
Plan apply_plan_fault(const Plan& plan, Fault f);
// Kernel v2's plan faults: the v2 plan with the fault's table edited (publish_before_last_partial,
// missing_cluster_barrier, seam_part_short), run unchecked; other faults leave it as it is.
PlanV2 apply_v2_plan_fault(const PlanV2& plan, Fault f);

// Launch and body faults: each hook returns what the clean kernel does unless its fault is planted.
struct FaultHooks {
    Fault fault = Fault::none;

    // launch (emulate.cpp)
    int launches(int steps) const;                       // epoch_by_value: shows only on a second launch
    int resident(int resident, int need) const;          // too_few_resident
    bool amd_in_order_loads(bool asked) const;           // poll_behind_loads
    void require(const Config& cfg) const;               // BadInput where the fault cannot show in this config
    // machine loop (machine.cpp)
    uint32_t kernel_epoch(uint32_t launcher_epoch, uint32_t first_epoch) const;  // epoch_by_value
    bool uses_slice_before_poll(const Plan& plan, int cta, const Instr& in) const;  // x_before_flag
    bool skips_waits(const Instr& in) const;             // kda_skips_proj_wait
    bool skips_wait(const Plan& plan, const Instr& in, const MailboxRef& e) const;  // gate_polls_last_partial
    // attn bodies (roles/attn.cpp)
    void gate_partials(int cta, int row, int src, std::vector<MailboxRef>& used) const;  // partial_counted_twice
    uint32_t wgt_tag(int cta, int row, uint32_t epoch) const;                          // stale_epoch_tag
    int x_store_first(int cta, int d0) const;            // x_store_off_by_one: the slice's first column stored
    bool stores_xrdy(int cta) const;                     // missing_xrdy
    bool xrdy_release(int cta) const;                    // flag_before_data
    // kda bodies (roles/kda.cpp)
    int accepted(int r, int a, int L) const;             // wrong_accepted_window: the num_accepted a task uses
    int g1_share(int r, int h, int ch, int share) const; // g1_share_short, g1_share_long: columns of g1 a chunk stores
    bool fast_exp_decay(int r, int h, int ch) const;     // decay_fast_exp: the decay as exp2(gate log2 e)
    // kernel v2's roles (emulator/v2/machine_v2.cpp)
    bool skips_empty_wait(int cta, int chunk, int depth) const;  // ring_refill_early: the first refill of slot 0
    bool skips_free_wait(int cta, int warp, int use) const;      // recv_slot_reused: the first reuse (use 1) of a slot
    bool skips_x_wait(int cta, int warp) const;                  // x_before_seam
    bool drops_seam_send(int cluster, int from, int to, int bar) const;  // seam_wgt_dropped (ranks; bar: V2SeamBar)
    bool skips_words_wait(int task, int wait) const;   // tail_word_unwaited: task 0's first words wait
    bool publishes_stale_tag(int entry) const;         // tail_stale_tag: receive entry 0's words
    bool skips_onrm_wait(int cta, bool last) const;    // tail_onrm_unwaited: CTA 0's last NORM
    bool skips_decay_wait(int task) const;             // tail_decay_unwaited: task 0's REC
    // BadInput where the fault is another kernel's (kernel: 1 or 2)
    void require_kernel(int kernel) const;
};

}  // namespace monokda::emu
