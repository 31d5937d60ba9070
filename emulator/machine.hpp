// The emulator's machine: every CTA of the plan is a cooperative process stepping through its
// instruction list over modelled device memory, one scheduler-chosen step at a time.
//
// Memory model (docs/emulator.md): every word keeps its latest store and the value other CTAs see
// until that store becomes visible (a delay the scheduler draws per store, so plain stores may land
// out of order). A release store becomes visible only after every earlier store of its CTA, and
// carries the CTA's vector clock; a poll that accepts it joins that clock. A data read is checked
// against the happens-before order (it must follow the store it reads through a release/acquire
// chain) and against the step it was stored in (epochs), whatever value it happens to see.
//
// This header is the machine's interface; machine_impl.hpp lists the files that implement it, one
// a concern (memory model, machine loop, role bodies, diagnosis, fault hooks).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/step.hpp"
#include "emulator/detectors.hpp"
#include "emulator/faults.hpp"
#include "emulator/schedule.hpp"

namespace monokda::emu {

struct MachineOptions {
    Schedule schedule;
    int resident = 0;                 // co-resident CTAs, admitted in launch order (Plan::list_at); 0: all
    bool amd_in_order_loads = false;  // a poll's load retires behind every earlier load of its CTA
    Fault fault = Fault::none;        // kernel-body faults (plan faults are applied to the plan)
    uint32_t epoch_start = 1;         // the launcher's epoch counter at step 0 (skips 0 when it wraps)
    bool record_spans = false;        // keep run/wait spans for the timeline
    int64_t watchdog_steps = 2000000; // scheduler steps without any instruction progress: LIVELOCK
    bool progress = false;            // show the launches' progress on stderr (core/progress.hpp)
    DetectorSet detectors;            // the checks that may end the run (all; detectors.hpp)
};

enum class EventKind : uint8_t { admit, begin, acquire, spin, store, data, loads, finish, done, violation };

struct Event {
    int64_t tick;
    int32_t cta, instr;  // instr: index in the CTA's list (-1: none)
    EventKind kind;
    uint8_t how;         // store: 0 plain, 1 release, 2 tagged
    int16_t step;
    MailboxRef entry;    // data: box = Mailbox::count, entry = data space (0 x, 1 proj, 2 qkv)
    uint32_t tag;        // epoch tag stored or seen; data: first column
    int64_t aux;         // store: visible at; loads: retire at; data: column count
};

struct Span {
    int32_t cta, instr;
    int64_t t0, t1;
    enum Kind : uint8_t { run, wait, stall } kind;
    int16_t step;
};

// Who wrote each element of an output (for naming the CTA behind a wrong value).
struct Provenance {
    std::vector<int32_t> cta, instr;  // per element; -1: not written in this step
};

struct MachineResult {
    Verdict verdict = Verdict::PASS;
    Detector detector = Detector::none;  // which detector gave the verdict
    std::string detail;           // the violation, or the wait-for chain
    std::vector<int> named;       // CTAs the detail names
    MailboxRef entry{Mailbox::count, 0};  // the mailbox entry the verdict is about (count: none)
    std::vector<Event> history;
    std::vector<Span> spans;
    std::vector<StepOutputs<float>> outputs;  // per completed step
    std::vector<std::vector<Provenance>> provenance;  // per step, in output_names() order (output_index)
    std::vector<uint32_t> epochs;                     // the launcher's epoch of each step started
    int64_t ticks = 0, sched_steps = 0;
    int steps_done = 0;
};

// Index of an output name in provenance (output_names() order; -1: none).
int output_index(const std::string& name);

// What differs between the launches of a run: launch k reads `base` with its prefix, delta and bank
// rows replaced by steps[k]'s (an empty vector: base's own), so K launches share one copy of the
// weights and states (100 MB for k3) instead of holding K.
struct StepRows {
    std::vector<bf16> prefix, delta, blocks;
};

// `launches` consecutive launches of the plan (steps[0..launches-1]) over one mailbox memory, never
// cleared; BadInput if steps holds fewer.
MachineResult run_machine(const Plan& plan, const StepInputs& base, const std::vector<StepRows>& steps, int launches,
                          const MachineOptions& opt);
// One launch of `in`.
MachineResult run_machine(const Plan& plan, const StepInputs& in, const MachineOptions& opt);

// One line per event: "[t=812] CTA 5 attn ATTN_X(slice 5): store XRDY[slice 5] tag 1 (release, visible t=900)".
std::string format_event(const Plan& plan, const Event& e);
// The last `last` events, then the last few of each named CTA.
std::string format_history(const Plan& plan, const MachineResult& r, size_t last = 40);

uint32_t next_epoch(uint32_t e);  // e + 1, skipping 0 (the tag of memory never written)
uint32_t prev_epoch(uint32_t e);

}  // namespace monokda::emu
