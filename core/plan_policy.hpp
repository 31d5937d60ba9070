// The plan's tuning policy: which PlanParams a step gets. The production shape's rules (k3) and
// their thresholds live here, apart from the plan's data structure (core/plan.hpp); each rule says
// why in a line and links the decision record that holds its evidence and how to re-measure it.
#pragma once
#include <string>

#include "core/config.hpp"
#include "core/plan.hpp"

namespace monokda {

struct PlanPolicy {
    // "k3": {132, 128, 16, 128} (one kda task a head; k3_for picks the rows for a step). "small":
    // {24, 16, 16, 8}: 16 attn slices and 4 chunks a head, so a small config still exercises many
    // CTAs and every cross-CTA hand-off. BadInput otherwise.
    static PlanParams preset(const std::string& name);
    // The preset whose model dims match cfg: k3_for(cfg, 132) for the production D, "small" otherwise.
    static PlanParams defaults_for(const Config& cfg);
    // On `blocks` CTAs (0: the preset's), for an AMD part (amd: CTAs in index order, since the
    // interleave rule is the H200's): k3_for(cfg, blocks) for the production D, so every choice that
    // depends on the CTA count (the kda task rows, the placement) is made for that count.
    static PlanParams defaults_for(const Config& cfg, int blocks, bool amd);

    // k3's kda tasks: chunks of kChunkRows state rows (a quarter of a head, the four chunks handing
    // each other q/k, g1 shares and Σō² partials) while every task has a CTA of its own, or fits two
    // a CTA and the step has at least kChunkMinLTwoACta tokens (two teams of half the threads pay off
    // only over more tokens); otherwise one task a whole head, which hands nothing between CTAs.
    // Decision: docs/decisions/0001-kda-chunk-rows.md.
    static constexpr int kChunkRows = 32, kChunkMinLTwoACta = 4;
    static int k3_chunk_rows(const Config& cfg, int blocks);
    // The k3 preset on `blocks` CTAs with k3_chunk_rows for cfg (the emulator's default and the GPU
    // launcher's plan, kernels/kda_validate.cpp device_plan).
    static PlanParams k3_for(const Config& cfg, int blocks);
    // k3's in_proj bands over every CTA from kSpreadGemvMinS rows on (there the pass is bound by each
    // CTA's products, and half the groups a CTA halves them), over the CTAs past the slices below
    // (there the attn CTAs' kda tasks overlap the pass with their loads).
    // Decision: docs/decisions/0002-gemv-bands-every-cta.md.
    static constexpr int kSpreadGemvMinS = 16;
    // k3's attn role from the same rows on: two row halves a slice, where every CTA takes in_proj
    // bands after its attn instructions anyway. Decision: docs/decisions/0003-attn-row-parts.md.
    static constexpr int kSplitAttnRowParts = 2;
    // k3's placement (interleave_ctas, interleave_width): with the bands past the slices always, TPC
    // pairs alternating (w = 2), so no GPC holds twice the bands of another; with the bands over every
    // CTA (w = 1) only for kPairedMinTasks..kPairedMaxTasks kda tasks, index order otherwise.
    // Decision: docs/decisions/0004-cta-placement.md.
    static constexpr int kPairedMinTasks = 96, kPairedMaxTasks = 144;
    static bool k3_interleave(const Config& cfg, const PlanParams& p);
    static int k3_interleave_width(const PlanParams& p) { return p.gemv_every_cta ? 1 : 2; }
};

}  // namespace monokda
