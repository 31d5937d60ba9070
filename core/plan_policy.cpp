// The plan's tuning policy (plan_policy.hpp): the presets and the production shape's rules.
#include "core/plan_policy.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace monokda {

PlanParams PlanPolicy::preset(const std::string& name) {
    if (name == "k3") return PlanParams{132, 128, 16, 128};
    if (name == "small") return PlanParams{24, 16, 16, 8};
    bad_input("unknown plan preset '" + name + "' (known: k3, small)");
}

int PlanPolicy::k3_chunk_rows(const Config& cfg, int blocks) {
    constexpr int r = kChunkRows;
    if (cfg.V % r != 0 || cfg.K % (cfg.V / r) != 0) return cfg.V;
    const int64_t tasks = int64_t(cfg.R) * cfg.H * (cfg.V / r);
    const bool one_a_cta = tasks <= blocks;
    const bool two_a_cta = tasks <= 2 * int64_t(blocks) && cfg.L >= kChunkMinLTwoACta;
    return one_a_cta || two_a_cta ? r : cfg.V;
}

PlanParams PlanPolicy::k3_for(const Config& cfg, int blocks) {
    PlanParams p = preset("k3");
    p.blocks = blocks;
    p.kda_chunk_rows = k3_chunk_rows(cfg, blocks);
    p.gemv_every_cta = cfg.S() >= kSpreadGemvMinS;
    if (p.gemv_every_cta && cfg.D / p.slice_width * kSplitAttnRowParts < blocks) p.attn_row_parts = kSplitAttnRowParts;
    p.interleave_ctas = k3_interleave(cfg, p);
    p.interleave_width = k3_interleave_width(p);
    return p;
}

bool PlanPolicy::k3_interleave(const Config& cfg, const PlanParams& p) {
    const int64_t attn_ctas = int64_t(cfg.D / p.slice_width) * p.attn_row_parts;
    const int64_t tasks = int64_t(cfg.R) * cfg.H * (cfg.V / p.kda_chunk_rows);
    if (p.gemv_every_cta) return tasks >= kPairedMinTasks && tasks <= kPairedMaxTasks;
    return 2 * attn_ctas <= p.blocks;
}

PlanParams PlanPolicy::defaults_for(const Config& cfg) {
    if (cfg.D == kProductionShape.D) return k3_for(cfg, preset("k3").blocks);
    PlanParams p = preset("small");
    if (cfg.D % p.slice_width == 0) p.blocks = std::max(p.blocks, cfg.D / p.slice_width + 8);
    return p;
}

PlanParams PlanPolicy::defaults_for(const Config& cfg, int blocks, bool amd) {
    if (blocks <= 0) {
        PlanParams p = defaults_for(cfg);
        if (amd) p.interleave_ctas = false;
        return p;
    }
    PlanParams p = cfg.D == kProductionShape.D ? k3_for(cfg, blocks) : defaults_for(cfg);
    p.blocks = blocks;
    if (amd) p.interleave_ctas = false;  // the interleave rule follows the H200's TPCs and GPCs
    return p;
}

}  // namespace monokda
