// Planted protocol bugs (--inject NAME): each one is a mistake a mono kernel can really make, and
// each must be caught and named by the emulator. The clean plan is Fault::none.
#pragma once
#include <string>
#include <vector>

#include "core/plan.hpp"

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
};

struct FaultInfo {
    Fault fault;
    const char* name;
    const char* what;
};
const std::vector<FaultInfo>& fault_list();
const char* to_string(Fault f);
Fault parse_fault(const std::string& name);  // BadInput naming the known ones

// The plan as the faulty kernel would run it (plan-level faults change instruction data).
Plan apply_plan_fault(const Plan& plan, Fault f);

}  // namespace monokda::emu
