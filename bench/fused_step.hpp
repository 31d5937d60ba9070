// The fused kda_pre as the benchmark drives it, through the kernel's own validated launcher
// (kernels/kda_pre.hpp): one launcher a step shape, one tensor set a weight/state set.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "bench/step_ptrs.hpp"
#include "core/config.hpp"
#include "core/plan.hpp"
#include "core/plan_options.hpp"

namespace monokda::bench {

// What a launch runs: the whole plan, or the plan without its kda instructions, or the attn
// instructions alone. The partial plans drop consumers only (nothing left waits for a mailbox no
// one fills), so their times split the step into seam, + in_proj, + everything after in_proj.
enum class FusedVariant { full, attn_gemv, attn };

class FusedStep {
public:
    virtual ~FusedStep() = default;
    // A step shape on the given sets (each holding cap.slots slots, conv_state laid out for step.L).
    virtual void prepare(const Config& step, const std::vector<StepPtrs>& sets,
                         FusedVariant variant = FusedVariant::full) = 0;
    virtual void enqueue(int set, void* stream) = 0;  // one launch, capturable
    virtual void check(void* stream) = 0;             // the kernel's error word; throws on an error
};

// The launch choices a benchmark can vary (each default is the launcher's / the plan's own, so
// FusedChoices{} is the production launch).
struct FusedChoices {
    bool weight_evict_first = true;            // gpu::LaunchOptions::weight_evict_first
    GemvBands gemv_bands = GemvBands::by_plan;  // gpu::device_plan
    int attn_parts = 0;                         // gpu::device_plan: attn CTAs a slice (0: the plan's)
    Placement placement = Placement::by_plan;   // gpu::device_plan: lists on launch CTAs
    int weight_pace_ns = -1;                    // gpu::LaunchOptions::weight_pace_ns (-1: the launcher's)

    // compared here, beside the fields, so that a new choice cannot be left out of a comparison
    bool operator==(const FusedChoices& o) const {
        return weight_evict_first == o.weight_evict_first && gemv_bands == o.gemv_bands && attn_parts == o.attn_parts &&
               placement == o.placement && weight_pace_ns == o.weight_pace_ns;
    }
    bool is_production() const { return *this == FusedChoices{}; }
};

// nullptr, with why set, when this build has no fused kernel or the device cannot run it.
std::unique_ptr<FusedStep> make_fused_step(const FusedChoices& choices, std::string& why);

}  // namespace monokda::bench
