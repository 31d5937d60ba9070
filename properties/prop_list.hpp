// The property checks, one function each (registered in properties.cpp).
#pragma once
#include "properties/properties.hpp"

namespace monokda::props {

#define MONOKDA_PROPERTY(fn) \
    Verdict fn(const Target& tg, const StepInputs& in, const StepOutputs<float>& base, uint64_t seed);
MONOKDA_PROPERTY(prop_spec_decode)
MONOKDA_PROPERTY(prop_continuation)
MONOKDA_PROPERTY(prop_accepted_shift)
MONOKDA_PROPERTY(prop_permutation)
MONOKDA_PROPERTY(prop_slot_relabel)
MONOKDA_PROPERTY(prop_independence)
MONOKDA_PROPERTY(prop_null_requests)
MONOKDA_PROPERTY(prop_null_initial_state)
MONOKDA_PROPERTY(prop_conv_state)
MONOKDA_PROPERTY(prop_gate_bounds)
MONOKDA_PROPERTY(prop_beta_zero_decay)
MONOKDA_PROPERTY(prop_attnres_identical)
MONOKDA_PROPERTY(prop_pad_rows)
MONOKDA_PROPERTY(prop_determinism)
#undef MONOKDA_PROPERTY

}  // namespace monokda::props
