// A "target" is anything that runs one step: StepInputs -> StepOutputs<float>. Properties and the
// shape fuzzer only ever talk to targets, so the reference, the emulator and the GPU kernel are
// checked by the same code. Targets are found by name in one registry.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/step.hpp"

namespace monokda::props {

// A target that could not produce outputs for a valid step (an emulator protocol verdict, a GPU
// error): a failure of the target, unlike BadInput, which means the target does not take the step.
struct TargetFailure : std::runtime_error {
    explicit TargetFailure(const std::string& w) : std::runtime_error(w) {}
};

// A run stopped because a stop was requested (monokda fuzz on SIGINT/SIGTERM), not a verdict.
struct Cancelled : std::runtime_error {
    explicit Cancelled(const std::string& w) : std::runtime_error(w) {}
};
// Asks every target that waits on something (a child process) to stop waiting and throw Cancelled.
// Safe to call from a signal handler.
void request_cancel() noexcept;
bool cancel_requested() noexcept;

struct Target {
    std::string name;
    std::function<StepOutputs<float>(const StepInputs&)> run;
    bool is_reference = false;  // the f32 reference itself: comparing it against the reference is vacuous
    // its in_proj runs on tensor cores: the agreement checks hold proj to SPEC §5's 99.5 % and
    // widen the envelope for it (`--in-proj tensor-cores`, verify::InProj)
    bool tensor_core_in_proj = false;
    // The reduction order its sums follow on a step, when it says (the emulator: its plan's; a
    // reference target: its own). The envelope check measures the reference in that order too: a
    // reordering of the original path is inside the envelope by SPEC §5's definition, however few of
    // the sampled orders flip the near-ties it flips.
    std::function<std::string(const StepInputs&)> declared_order;
};

struct TargetEntry {
    std::string name;
    std::string summary;
    std::function<Target()> make;
    std::function<std::string()> unavailable;  // "" when this build and machine can run it, else why not
};

// Every target this build knows of, including those it cannot run here.
const std::vector<TargetEntry>& target_registry();
// BadInput for an unknown name, or for a known target this build or machine cannot run (e.g. gpu
// without a GPU backend).
Target make_target(const std::string& name);
// The f32 reference with a given reduction order ("sequential" is the reference itself).
Target reference_target(const std::string& order = "sequential");

}  // namespace monokda::props
