// Every dimension of SPEC §1 as a run-time value, plus the step shape. Two presets: k3 and small.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/shape.hpp"

namespace monokda {

enum class ConvLayout { sd, ds };  // sd: [slots, W-2+L, C] (dim contiguous); ds: [slots, C, W-2+L]

struct Config {
    // model (one TP rank): the production shape unless a preset or a fixture says otherwise
    int D = kProductionShape.D, H = kProductionShape.H, K = kProductionShape.K, V = kProductionShape.V,
        F = kProductionShape.F, N = kProductionShape.N(), C = kProductionShape.C(), W = kProductionShape.W;
    double eps = kProductionShape.eps, l2_eps = kProductionShape.l2_eps, lower_bound = kProductionShape.lower_bound;
    // step
    int nb = 4, R = 2, L = 4;
    bool block_write = false;
    ConvLayout conv_layout = ConvLayout::sd;
    int slots = 0;       // first dimension of conv_state / ssm_state; slot 0 is never a live slot
    uint64_t seed = 1;

    int E() const { return H * K; }
    int S() const { return R * L; }
    int conv_len() const { return W - 2 + L; }  // entries kept per conv_state slot
    // conv_state's shape in this layout: [slots, conv_len, C] (sd) or [slots, C, conv_len] (ds)
    std::vector<int64_t> conv_state_shape() const {
        if (conv_layout == ConvLayout::sd) return {slots, conv_len(), C};
        return {slots, C, conv_len()};
    }
    int min_N() const { return 4 * E() + F + H; }
    // in_proj's rows as stored: q|k|v|g|f_a|beta, zero-padded to a multiple of 16 (SPEC §1)
    static int padded_N(int E, int F, int H) { return padded_in_proj_rows(E, F, H); }
    // column offsets into proj (SPEC §3 B)
    int col_g2() const { return 3 * E(); }
    int col_fa() const { return 4 * E(); }
    int col_beta() const { return 4 * E() + F; }

    static Config preset(const std::string& name);  // "k3" (kProductionShape) | "small" (kSmallShape); BadInput otherwise
    static Config of(const ModelShape& m);          // m's dims, the default step
    bool has_shape(const ModelShape& m) const;      // every model dim (not eps) as m's
    void validate() const;                          // BadInput naming the inconsistent field

    std::map<std::string, std::string> to_metadata() const;
    static Config from_metadata(const std::map<std::string, std::string>& md);  // validates
};

const char* to_string(ConvLayout l);
ConvLayout parse_conv_layout(const std::string& s);

}  // namespace monokda
