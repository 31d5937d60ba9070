// `monokda emulate --kernel v2` as a library: a fixture's x (the reference's attn stage) and in_proj
// weight packed as kernel v2's plan streams it (the plan built for the fixture, or one read from a
// plan file), the reference proj in the plan's order (in_proj=cluster:ranks), then runs of the plan
// under a schedule and a fault, judged by the machine's detectors and then bit for bit against that
// reference (docs/emulator.md "Kernel v2").
#pragma once
#include <memory>
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
    // The plan built for the fixture with the tail (`--tail`: the owners publish, the kda tasks run, and
    // qkv, g1, o, core_out and the states are judged too); a given plan has its own.
    bool tail = false;
    // A plan to run instead of the one built for the fixture (`--plan FILE`: PlanV2::read_json; the
    // fixture must have its shape), its file as the replay line names it, and the digest it must have
    // (`--plan-digest`, the replay line's: "" none).
    std::shared_ptr<const PlanV2> plan;
    std::string plan_file, plan_digest;
};

struct V2Prepared {
    FixtureSpec fixture;
    PlanV2 plan;                     // the clean plan
    std::vector<bf16> x, ref_proj;   // [S][D]; [S][N] the reference in the plan's order (x too, where its seam computes it)
    SeamInputs seam;                 // the seam's inputs, where the plan has one
    std::vector<uint16_t> packed;    // plan.pack_weight of the fixture's in_proj_w
    // where the plan has the tail: the step's inputs, and the reference's g1, qkv, conv_state, o,
    // ssm_state and core_out in the plan's order (from ref_proj)
    std::shared_ptr<const StepInputs> step;
    StepOutputs<float> ref_tail;
    std::string plan_file, plan_digest;  // a given plan's (V2EmulateOptions::plan), "" for the built one
    double seconds_fixture = 0, seconds_reference = 0;
};
// BadInput where a given plan is not of the fixture's shape or not of the digest asked for, or its
// machine would hold more than 16 GiB.
V2Prepared prepare_v2(const V2EmulateOptions& o);
// The same on step inputs already read or made (a test's make_fixture; o.fixture only names them).
V2Prepared prepare_v2(const V2EmulateOptions& o, const StepInputs& in);

// A kernel v2 plan's digest, as the replay line's --plan-digest names it: FNV-1a 64 of its plan file's
// text without the version stamps, 16 hex digits.
std::string plan_digest(const PlanV2& p);

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

// The command line that re-runs o on prep ("monokda emulate --kernel v2 ..."; a given plan's file
// and digest with it).
std::string v2_replay(const V2Prepared& prep, const V2EmulateOptions& o);

}  // namespace monokda::emu
