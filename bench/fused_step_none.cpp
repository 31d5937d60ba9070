// Used when the tree has no fused kernel library: the benchmark says so instead of a number.
#include "bench/fused_step.hpp"

namespace monokda::bench {

const char* to_string(FusedVariant v) {
    return v == FusedVariant::full ? "full" : v == FusedVariant::attn_gemv ? "attn+gemv" : "attn";
}

std::unique_ptr<FusedStep> make_fused_step(std::string& why) {
    why = "not measured: this build has no fused kernel (kernels/ library absent)";
    return nullptr;
}

}  // namespace monokda::bench
