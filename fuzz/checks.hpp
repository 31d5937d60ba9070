// The checks a fuzz case runs, each by name, so a failure is replayed by (fixture, check, seed).
#pragma once
#include <string>
#include <vector>

#include "properties/properties.hpp"

namespace monokda::fuzz {

// The checks of case `index`: "reference-stages" (teacher-forced, unless the target is the reference
// itself), "oracle" (the stages in f64), "envelope" (free-running, inside the envelope measured on
// the case; properties/agreement.hpp), the properties that need no extra run, and `per_case`
// of the others in turn (case i takes the next per_case of them, round robin; 0: all of them).
std::vector<std::string> case_checks(const props::Target& target, long index, int per_case);
std::vector<std::string> all_check_names();

// Runs the named check on a step and the target's outputs for it; BadInput for an unknown name.
props::Verdict run_check(const std::string& name, const props::Target& target, const StepInputs& in,
                         const StepOutputs<float>& out, uint64_t seed);

// Runs the target then the check; a step the target rejects (BadInput) is a SKIP, not a failure. The
// check "target-run" fails when the run itself fails (TargetFailure: an emulator verdict, a GPU error).
props::Verdict run_target_and_check(const std::string& name, const props::Target& target, const StepInputs& in,
                                    uint64_t seed);

}  // namespace monokda::fuzz
