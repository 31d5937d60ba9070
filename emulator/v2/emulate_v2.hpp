// `monokda emulate --kernel v2` as a library: a fixture's x (the reference's attn stage) and in_proj
// weight packed as kernel v2's plan streams it, the reference proj in the plan's order
// (in_proj=cluster:ranks), then runs of the plan under a schedule and a fault, judged by the
// machine's detectors and then bit for bit against that reference (docs/emulator.md "Kernel v2").
#pragma once
#include <string>
#include <vector>

#include "core/plan_v2.hpp"
#include "emulator/emulate.hpp"
#include "emulator/v2/machine_v2.hpp"

namespace monokda::emu {

struct V2EmulateOptions {
    FixtureSpec fixture;
    Schedule schedule;
    Fault fault = Fault::none;
    DetectorSet detectors;
    int64_t watchdog_steps = 2000000;
};

struct V2Prepared {
    FixtureSpec fixture;
    PlanV2 plan;                     // the clean plan
    std::vector<bf16> x, ref_proj;   // [S][D]; [S][N] the reference in the plan's order (x too, where its seam computes it)
    V2SeamInputs seam;               // the seam's inputs, where the plan has one
    std::vector<uint16_t> packed;    // plan.pack_weight of the fixture's in_proj_w
    double seconds_fixture = 0, seconds_reference = 0;
};
V2Prepared prepare_v2(const V2EmulateOptions& o);

struct V2EmulateResult {
    Verdict verdict = Verdict::PASS;
    std::string report;
    V2MachineResult run;
    PlanV2 plan;  // as run (a plan fault applied)
    std::vector<PlanV2::Problem> problems;
    double seconds_run = 0;
};
// BadInput for a fault of kernel v1 or a schedule v2 does not take.
V2EmulateResult emulate_v2(const V2Prepared& prep, const V2EmulateOptions& o);

// The command line that re-runs o ("monokda emulate --kernel v2 ...").
std::string v2_replay(const V2EmulateOptions& o);

}  // namespace monokda::emu
