// The v2 probe's seam fixture (v2_seam_host.hpp): core's generator and the reference's attnres in
// the order kernel v1's plan declares for the production shape; the seam's stages on it.
#include "bench/probes/v2_seam_host.hpp"

#include "core/fixture_gen.hpp"
#include "core/plan.hpp"
#include "reference/reference.hpp"

namespace monokda::probe::v2 {

std::vector<uint16_t> bits(const std::vector<bf16>& v) {
    std::vector<uint16_t> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = v[i].bits;
    return out;
}

namespace {
std::vector<bf16> values(const std::vector<uint16_t>& v, size_t n) {
    std::vector<bf16> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = bf16::from_bits(v[i]);
    return out;
}
}  // namespace

SeamFixture seam_fixture(int R, int L, int nb, uint64_t seed) {
    Config cfg = Config::preset("k3");
    cfg.R = R, cfg.L = L, cfg.nb = nb, cfg.block_write = false, cfg.seed = seed;
    const StepInputs in = make_fixture(cfg);
    const ReductionOrder ord = Plan::build(cfg, PlanParams{}).reduction_order();
    SeamFixture f;
    f.S = cfg.S(), f.nb = nb, f.eps = float(cfg.eps), f.order = ord.str();
    f.prefix = bits(in.prefix), f.delta = bits(in.delta), f.blocks = bits(in.blocks);
    f.res_norm_w = bits(in.res_norm_w), f.res_proj_w = bits(in.res_proj_w), f.input_norm_w = bits(in.input_norm_w);
    std::vector<bf16> prefix_out, blocks, x;
    ref::attnres<float>(in, ord, prefix_out, blocks, x);
    f.prefix_out = bits(prefix_out), f.x = bits(x);
    return f;
}

SeamStages seam_expected(const SeamFixture& f, int S, int w) {
    const size_t D = f.res_norm_w.size(), SD = size_t(S) * D;
    SeamInputs in;
    in.prefix = values(f.prefix, SD), in.delta = values(f.delta, SD), in.blocks = values(f.blocks, 8 * SD);
    in.res_norm_w = values(f.res_norm_w, D), in.res_proj_w = values(f.res_proj_w, D), in.input_norm_w = values(f.input_norm_w, D);
    in.eps = f.eps;
    return seam_stages(in, f.nb, w);
}

}  // namespace monokda::probe::v2
