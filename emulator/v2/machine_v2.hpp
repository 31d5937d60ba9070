// The emulator's machine for kernel v2's in_proj (core/plan_v2.hpp, docs/emulator.md "Kernel v2"):
// every role instance of the plan (a CTA's producer, reducer, eight consumer warps and seam team) is a
// cooperative process stepping through its program, one scheduler-chosen step at a time, over
// modelled mbarriers (arrival counts, byte counts, phases), a ring of slots a CTA, bulk copies and
// st.async stores that land after a delay the schedule draws, peer arrives, cluster barriers and
// each tile's warp pair. Vector clocks over a cluster's processes order every hand-off; a detector
// checks each mechanism's rule, and the outputs are proj, computed in the plan's order.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "core/plan_v2.hpp"
#include "core/seam_stages.hpp"
#include "core/step.hpp"
#include "emulator/detectors.hpp"
#include "emulator/faults.hpp"
#include "emulator/schedule.hpp"

namespace monokda::emu {

struct V2MachineOptions {
    Schedule schedule;                 // random, pct, rr, or delay:cta:N (every role of CTA N delayed)
    Fault fault = Fault::none;         // body faults (plan faults are applied to the plan: apply_v2_plan_fault)
    DetectorSet detectors;             // the checks that may end the run
    int64_t watchdog_steps = 2000000;  // scheduler steps without a step completing: LIVELOCK
};

struct V2MachineResult {
    Verdict verdict = Verdict::PASS;
    Detector detector = Detector::none;
    std::string detail;            // the violation, or the blocked processes of a hang
    std::vector<int> named;        // processes the detail names (PlanV2 process numbers)
    std::vector<bf16> proj;        // [S][N] as the owners stored it (complete only when the run finished)
    std::vector<int32_t> writer;   // [S][N]: the receive entry whose REDUCE stored each element (-1: none)
    // the tail's outputs (a plan with the tail): qkv and conv_state as the owners' PUBLISH stored them,
    // g1, o, ssm_state and core_out as the tasks did (the other members empty)
    StepOutputs<float> tail;
    std::vector<int32_t> task_of;  // [S][E]: the task that stored each element of o (and of core_out; -1: none)
    std::string history;           // the last events, one a line
    int64_t ticks = 0, sched_steps = 0;
    bool finished = false;         // every process ran to its end
};

// One launch of the plan over the weight packed by plan.pack_weight, and x ([S][D] bf16) where the
// plan has no seam, or the seam's inputs (core/seam_stages.hpp) where it has one (x is then what its seam computes, each CTA
// its slice); the step's inputs where the plan has the tail (its conv, gate, recurrence and norm read
// them). BadInput where the schedule does not apply to v2 (delay:ROLE) or the shapes do not match the plan.
V2MachineResult run_v2_machine(const PlanV2& plan, const std::vector<bf16>& x, const std::vector<uint16_t>& packed,
                               const V2MachineOptions& opt, const SeamInputs& seam = {}, const StepInputs* step = nullptr);

}  // namespace monokda::emu
