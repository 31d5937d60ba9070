// Draws fuzz cases: a step shape and its values from one seed, deterministically.
#pragma once
#include <cstdint>
#include <string>

#include "core/scale_profile.hpp"
#include "core/step.hpp"

namespace monokda::fuzz {

struct CaseShape {
    Config cfg;               // model dims from the preset; R, L, nb, block_write, conv_layout, seed drawn
    int null_requests = 0;    // requests with every slot "none"
    int partial_nulls = 0;    // live requests with "none" at some tokens other than a-1 (core/fixture_gen.hpp)
    bool init_null = false;   // one live request loses its initial state (idx[r, a-1] = -1)
    int extra_slots = 0;      // untouched slots
    int stride = 1;           // slot ids spaced by this (sparse, strided state)
    bool extreme = false;     // rows at +-2^-60 .. 2^50, zero rows, scaled states, saturating gates
    ScaleProfile scale = ScaleProfile::standard;  // the generator's scale profile (core/scale_profile.hpp)
    std::string str() const;  // "R=5 L=3 nb=2 bw ds nulls=1 partial-nulls=1 init-null stride=3 extreme scale=gate-low"
};

// R 1..64 (60% of the cases 1..4, 10% 17..64), L 1..8, nb 1..8, block-write, both layouts, null requests, one
// request without an initial state, partial null columns, extra and strided slots, extreme scales,
// scale profiles (a third of the cases, never with extreme values). The k3 preset keeps
// S <= 32 so that a case stays within seconds.
CaseShape draw_shape(const Config& preset, uint64_t seed);
StepInputs build_case(const CaseShape& shape);

}  // namespace monokda::fuzz
