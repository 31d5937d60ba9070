// `monokda emulate` as a library: prepare a fixture once (inputs, the reference in the plan's order,
// the f64 oracle and the envelope), then run the plan under any schedule, fault and residency, and
// judge the run: protocol verdicts from the machine, then results bit for bit against the reference,
// then the envelope.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/plan_policy.hpp"
#include "core/plan_options.hpp"
#include "core/step.hpp"
#include "emulator/envelope.hpp"
#include "emulator/faults.hpp"
#include "emulator/machine.hpp"
#include "emulator/schedule.hpp"

namespace monokda::emu {

// Where the step comes from: a fixture file, or a built-in fixture generated from a preset.
struct FixtureSpec {
    std::string file;          // non-empty: read this fixture
    std::string preset = "k3";
    int R = 2, L = 4, nb = 4;
    uint64_t seed = 1;
    std::string str() const;   // "k3.R2.L4.nb4.s1" or "file"
    StepInputs inputs() const;  // the file read, or the preset's fixture generated
};

struct EmulateOptions {
    FixtureSpec fixture;
    int blocks = 0;              // 0: the plan's defaults for the config (132 for k3)
    Schedule schedule;
    int resident = 0;            // 0: every CTA co-resident
    int steps = 1;
    bool amd = false;            // AMD in-order load retirement
    Fault fault = Fault::none;
    DetectorSet detectors;       // the checks that may fail the run (all; detectors.hpp)
    int envelope_orders = 0;     // 0: the built-in envelope if the fixture has one, else measure 8 (k3) or
                                 // 12 orders; N > 0: measure N; -1: no envelope check
    std::string envelope_in;     // use a saved envelope instead of computing one
    bool timeline = false;       // record spans for a timeline
    bool progress = false;       // a run of several launches shows its progress on stderr
    int kda_teams = 1;           // kda tasks a CTA runs side by side, as the NVIDIA kernel does (2): Plan::with_kda_teams
    GemvBands gemv_bands = GemvBands::by_plan;  // who runs in_proj's bands (core/plan.hpp)
    // A plan to run instead of the built-in one (`--plan FILE`: Plan::read_json), and its digest
    // (plan_digest, the replay token's plan field); blocks and gemv_bands then do not apply.
    std::shared_ptr<const Plan> plan;
    std::string plan_digest;  // a token's: the digest the given plan must have ("" none)
};

// The built-in plan for a step, as `monokda emulate` and `monokda plan` build it.
Plan builtin_plan(const Config& cfg, int blocks, GemvBands bands, bool amd);
// A plan's digest as the replay token names it: FNV-1a 64 of its file text, 16 hex digits.
std::string plan_digest(const Plan& p);
std::string text_digest(const std::string& text);  // FNV-1a 64 of text, 16 hex digits (plan_digest's)
// BadInput naming the first model or step dim (D, H, K, V, F, N, W, R, L, nb) in which a given plan's
// config and the fixture's differ.
void require_plan_shape(const Config& plan, const Config& fixture);

// The replay token of a run: emulator/replay_token.hpp.

struct Prepared {
    FixtureSpec fixture;
    Plan plan;                            // the clean plan
    std::string plan_digest;              // a given plan's (EmulateOptions::plan), "" for the built-in one
    StepInputs input;                     // step 0's inputs, the weights and states every step reads
    std::vector<StepRows> rows;           // per step: its prefix, delta and bank rows (step_rows; step 0: input's)
    std::vector<StepOutputs<float>> refs; // the reference in the plan's order, per step
    std::unique_ptr<TensorFile> oracle;   // step 0, f64 (null when a read or built-in envelope recorded the distance)
    std::unique_ptr<Envelope> envelope;   // null: no envelope check
    std::string envelope_source;          // "measured", "built in", or "read from FILE"
    std::vector<EnvelopeCheck> ref_checks;  // the plan-order reference against the envelope
    double seconds_fixture = 0, seconds_reference = 0, seconds_envelope = 0;
};

// Steps a run takes: o.steps, and at least 2 for a fault that shows only on a second launch.
int steps_for(const EmulateOptions& o);

// Builds the fixture, the plan, the references for `steps` steps and the envelope.
Prepared prepare(const EmulateOptions& o, int steps);

struct EmulateResult {
    Verdict verdict = Verdict::PASS;
    std::string report;     // the full human-readable report
    std::string token;
    MachineResult run;
    Plan plan;              // the plan as run (faults applied)
    int resident = 0, steps = 1;
    double seconds_run = 0;
    std::vector<std::string> problems;  // the plan's structural problems (a file's: a run that passes still fails)
};

// Steps beyond prep.rows.size() are prepared on the way (prep is extended: its input's rows are
// swapped out and back while the new step's reference runs). Runs that share one Prepared on several
// threads (`monokda emulate --sweep`) must have it prepared for their steps first, as prepare() does.
EmulateResult emulate(Prepared& prep, const EmulateOptions& o);

// The rows of step k of a multi-step run: step 0's prefix, delta and bank rows rotated by k rows, so
// consecutive steps carry different values through the same mailboxes (empty vectors when k is a
// multiple of S: step 0's own). rotate_rows: the whole inputs of step k, for a check beside the run.
StepRows step_rows(const StepInputs& in, int k);
StepInputs rotate_rows(const StepInputs& in, int k);

}  // namespace monokda::emu
