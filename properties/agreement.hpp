// A target against the reference, stage by stage, the way SPEC §5 defines "the same" (teacher
// forcing): each stage of the original path is fed the target's own exported hand-offs and must
// reproduce the target's output of that stage to within 1 bf16 ulp at row scale; prefix_out, blocks
// and conv_state bit-exact; ssm_state within a relative bound.
//  - reference-stages: the stages in f32 (the reference).
//  - oracle: the stages in f64 (the oracle). Meaningful for unit-scale inputs only: with extreme rows
//    AttnRes can cancel catastrophically in f32, where no f32 implementation is near the f64 value.
#pragma once
#include "properties/properties.hpp"

namespace monokda::props {

struct AgreementBounds {
    double stage_row_ulp = 1.0;  // SPEC §5: never more than 1 bf16 ulp at row scale per stage
    double state_rel = 1e-5;     // ssm_state, per slot and head, relative to its largest magnitude
};

Verdict check_reference_stages(const StepInputs& in, const StepOutputs<float>& out, const AgreementBounds& b = {});

Verdict check_oracle(const StepInputs& in, const StepOutputs<float>& out, const AgreementBounds& b = {});

}  // namespace monokda::props
