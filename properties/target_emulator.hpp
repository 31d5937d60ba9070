// The emulator as a target: the CTA plan for the step's config, run once on the modelled machine
// under a seeded random schedule. A protocol verdict other than PASS is a TargetFailure.
#pragma once
#include "properties/target.hpp"

namespace monokda::props {

Target emulator_target();

}  // namespace monokda::props
