// Scale profiles of the fixture generator: named value ranges that a real model reaches and the
// default draws do not, where the reference's safeguards (max-subtracted softmax, eps in every norm,
// a sigmoid that cannot overflow, f32 sums) decide whether a result is finite. docs/fixtures.md.
#pragma once
#include <string>
#include <vector>

#include "core/step.hpp"

namespace monokda {

enum class ScaleProfile { standard, attnres_large, prefix_large, norm_tiny, gate_low };

struct ScaleProfileInfo {
    ScaleProfile profile;
    const char* name;       // as `monokda fixture --scale` takes it
    const char* reaches;    // what the fixture holds, in one line
    const char* safeguard;  // what an implementation needs to stay finite (or right) on it
};

// Every profile, "default" (ScaleProfile::standard) first.
const std::vector<ScaleProfileInfo>& scale_profiles();
const char* to_string(ScaleProfile p);
ScaleProfile parse_scale_profile(const std::string& name);  // BadInput naming the known ones

// Moves a generated step's values into the profile's range, from a random stream of its own
// (cfg.seed), so the rest of the step is the default fixture's; `standard` changes nothing.
void apply_scale_profile(StepInputs& in, ScaleProfile p);

}  // namespace monokda
