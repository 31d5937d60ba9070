// Shrinks a failing step: fewer requests, tokens, bank rows, slots, smaller dims, fewer non-zero
// inputs, keeping each change only while the same check still FAILs on the same target.
#pragma once
#include <string>
#include <vector>

#include "core/step.hpp"
#include "properties/target.hpp"

namespace monokda::fuzz {

struct ShrinkResult {
    StepInputs in;
    int tried = 0, taken = 0;
    bool timed_out = false;
    std::vector<std::string> steps;  // one line per change taken, in order
};

// keep_dims: only R, L, nb, block-write, slots, layout and values change (a target that takes one
// model shape only, such as the production one).
ShrinkResult shrink_failure(const props::Target& target, const std::string& check, uint64_t check_seed,
                            const StepInputs& failing, double max_seconds, bool keep_dims = false);

// Input elements that are not zero (all tensors of the step), for reports.
long long nonzero_inputs(const StepInputs& in);
// "R=1 L=2 nb=1 D=8 H=1 K=4 F=2 slots=3 sd"
std::string step_summary(const StepInputs& in);

}  // namespace monokda::fuzz
