// Deterministic fixtures from (config, R, L, nb, block_write, layout, seed) with realistic scales,
// and the cases the default draws never reach: partial null columns and scale profiles.
#pragma once
#include "core/scale_profile.hpp"
#include "core/step.hpp"

namespace monokda {

struct FixtureOptions {
    int null_requests = 0;     // requests whose every state index is "none" (alternately -1 and 0)
    // live requests with "none" (0 and -1 in turn) at some tokens other than a-1, their initial
    // state kept: those tokens' states are written nowhere (SPEC §3 E)
    int partial_nulls = 0;
    int extra_slots = 3;       // untouched slots beyond those the step uses
    ScaleProfile scale = ScaleProfile::standard;
};

// cfg carries the model dims and the step shape (R, L, nb, block_write, conv_layout, seed);
// cfg.slots is set here. Throws BadInput for an invalid config, null_requests > R, or partial
// nulls beyond the live requests or with L = 1.
StepInputs make_fixture(Config cfg, const FixtureOptions& opt = {});

}  // namespace monokda
