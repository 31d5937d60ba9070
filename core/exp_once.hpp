// exp as every f32 stage of SPEC §3 evaluates it, on the host and on the device alike: exp in
// double, rounded once to f32. That is the correctly rounded f32 exp except where the double lies
// within its own error of an f32 midpoint (about one argument in 2^28), and it is the same on every
// libm that rounds its double exp within an ulp. glibc's expf is not: it misrounds about one
// argument in a thousand, and which ones may differ between the variants it picks for a CPU
// (docs/decisions/0023-exp-in-double.md).
#pragma once
#include <math.h>

#include "core/bf16.hpp"

namespace monokda {

MONOKDA_HD float exp_once(float x) { return float(::exp(double(x))); }
MONOKDA_HD float sigmoid_once(float z) { return 1.0f / (1.0f + exp_once(-z)); }

}  // namespace monokda
