// The kda_pre kernel as a target: device copies of the step (KdaRunner), one launch with the
// hand-offs exported, outputs read back. Launches are serialised (one cooperative kernel fills the
// device), so fuzz workers may share the target. A shape the kernel does not build is BadInput; a
// device error or a timed-out poll is a TargetFailure.
#pragma once
#include <string>

#include "properties/target.hpp"

namespace monokda::props {

// "" when this build and machine can run the kernel, else why not.
std::string gpu_unavailable();
Target gpu_target();

}  // namespace monokda::props
