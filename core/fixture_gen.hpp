// Deterministic fixtures from (config, R, L, nb, block_write, layout, seed) with realistic scales.
#pragma once
#include "core/step.hpp"

namespace monokda {

struct FixtureOptions {
    int null_requests = 0;     // requests whose every state index is "none" (alternately -1 and 0)
    int extra_slots = 3;       // untouched slots beyond those the step uses
};

// cfg carries the model dims and the step shape (R, L, nb, block_write, conv_layout, seed);
// cfg.slots is set here. Throws BadInput for an invalid config or null_requests > R.
StepInputs make_fixture(Config cfg, const FixtureOptions& opt = {});

}  // namespace monokda
