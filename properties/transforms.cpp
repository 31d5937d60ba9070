// Fixture transforms (properties/transforms.hpp): valid variant steps made from a step.
#include "properties/transforms.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace monokda::props {

std::vector<bf16> random_bf16(size_t n, Rng& rng, double sd) {
    // uniform with standard deviation sd: four values from one draw, as fills can be megabytes
    std::vector<bf16> v(n);
    const double scale = sd * std::sqrt(3.0) / 32768.0;
    for (size_t i = 0; i < n; i += 4) {
        uint64_t bits = rng.next();
        for (size_t j = i; j < std::min(n, i + 4); ++j, bits >>= 16)
            v[j] = bf16::round(float((double(bits & 0xffff) - 32767.5) * scale));
    }
    return v;
}

namespace {

size_t conv_size(const Config& c) { return size_t(c.slots) * size_t(c.conv_len()) * size_t(c.C); }
size_t ssm_size(const Config& c) { return size_t(c.slots) * size_t(c.H) * size_t(c.V) * size_t(c.K); }

// Token row src of `in` becomes row dst of `out` (same D): the per-token inputs and the token's slot.
void copy_token_row(const StepInputs& in, size_t src, StepInputs& out, size_t dst) {
    const size_t D = size_t(in.cfg.D);
    std::copy_n(&in.prefix[src * D], D, &out.prefix[dst * D]);
    std::copy_n(&in.delta[src * D], D, &out.delta[dst * D]);
    std::copy_n(&in.blocks[src * 8 * D], 8 * D, &out.blocks[dst * 8 * D]);
    out.state_indices[dst] = in.state_indices[src];
}

}  // namespace

StepInputs select_requests(const StepInputs& in, const std::vector<int>& reqs) {
    const Config& c = in.cfg;
    StepInputs out = in;
    out.cfg.R = int(reqs.size());
    const size_t D = size_t(c.D), S2 = size_t(out.cfg.S());
    out.prefix.assign(S2 * D, bf16{});
    out.delta.assign(S2 * D, bf16{});
    out.blocks.assign(S2 * 8 * D, bf16{});
    out.state_indices.assign(S2, 0);
    out.num_accepted.assign(reqs.size(), 1);
    for (size_t i = 0; i < reqs.size(); ++i) {
        const int r = reqs[i];
        if (r < 0 || r >= c.R) bad_input("select_requests: request " + std::to_string(r) + " out of range");
        for (int t = 0; t < c.L; ++t) copy_token_row(in, row_of(c, r, t), out, i * size_t(c.L) + size_t(t));
        out.num_accepted[i] = in.num_accepted[size_t(r)];
    }
    out.validate_step();
    return out;
}

StepInputs relabel_slots(const StepInputs& in, const std::vector<int32_t>& map, int new_slots, Rng& rng) {
    const Config& c = in.cfg;
    if (int(map.size()) != c.slots) bad_input("relabel_slots: the map must have one entry per slot");
    StepInputs out = in;
    out.cfg.slots = new_slots;
    out.conv_state = random_bf16(conv_size(out.cfg), rng);
    out.ssm_state.resize(ssm_size(out.cfg));
    const std::vector<bf16> fill = random_bf16(out.ssm_state.size(), rng, 0.1);
    for (size_t i = 0; i < fill.size(); ++i) out.ssm_state[i] = fill[i].to_float();
    const int len = c.conv_len();
    const size_t per_slot = size_t(c.H) * c.V * c.K;
    for (int s = 0; s < c.slots; ++s) {
        const int32_t d = map[size_t(s)];
        if (d < 0) continue;
        if (d >= new_slots) bad_input("relabel_slots: slot maps outside the new state");
        for (int j = 0; j < len; ++j)
            for (int ch = 0; ch < c.C; ++ch)
                out.conv_state[size_t(out.conv_at(d, j, ch))] = in.conv_state[size_t(in.conv_at(s, j, ch))];
        std::copy_n(&in.ssm_state[size_t(s) * per_slot], per_slot, &out.ssm_state[size_t(d) * per_slot]);
    }
    for (auto& s : out.state_indices) {
        if (s <= 0) continue;
        const int32_t d = map[size_t(s)];
        if (d <= 0) bad_input("relabel_slots: a live slot maps to no slot");
        s = d;
    }
    out.validate_step();
    return out;
}

std::vector<bf16> resize_conv_state(const StepInputs& from, const Config& to, Rng& rng) {
    StepInputs shape;  // only for conv_at in the target layout
    shape.cfg = to;
    std::vector<bf16> out = random_bf16(conv_size(to), rng);
    const int len = std::min(from.cfg.conv_len(), to.conv_len());
    const int slots = std::min(from.cfg.slots, to.slots);
    for (int s = 0; s < slots; ++s)
        for (int j = 0; j < len; ++j)
            for (int ch = 0; ch < to.C; ++ch)
                out[size_t(shape.conv_at(s, j, ch))] = from.conv_state[size_t(from.conv_at(s, j, ch))];
    return out;
}

StepInputs truncate_tokens(const StepInputs& in, int L2) {
    const Config& c = in.cfg;
    if (L2 < 1 || L2 > c.L) bad_input("truncate_tokens: L2 must be in 1..L");
    StepInputs out = in;
    out.cfg.L = L2;
    const size_t D = size_t(c.D), S2 = size_t(out.cfg.S());
    out.prefix.resize(S2 * D);
    out.delta.resize(S2 * D);
    out.blocks.resize(S2 * 8 * D);
    out.state_indices.resize(S2);
    for (int r = 0; r < c.R; ++r)
        for (int t = 0; t < L2; ++t) copy_token_row(in, row_of(c, r, t), out, row_of(out.cfg, r, t));
    for (auto& a : out.num_accepted) a = std::min(a, L2);
    Rng unused(0);  // every entry of the shorter state exists in the longer one
    out.conv_state = resize_conv_state(in, out.cfg, unused);
    out.validate_step();
    return out;
}

StepInputs restrict_dims(const StepInputs& in, int D2, int H2, int K2, int F2) {
    const Config& c = in.cfg;
    if (D2 < 1 || D2 > c.D || H2 < 1 || H2 > c.H || K2 < 1 || K2 > c.K || F2 < 1 || F2 > c.F)
        bad_input("restrict_dims: every new dim must be in 1..old dim");
    StepInputs out;
    Config& o = out.cfg;
    o = c;
    o.D = D2; o.H = H2; o.K = K2; o.V = K2; o.F = F2;
    o.C = 3 * o.E();
    const int pad = c.N - c.min_N();
    o.N = o.min_N() + pad;
    o.validate();
    const int S = c.S(), E = c.E(), E2 = o.E();
    auto cols = [&](const std::vector<bf16>& v, int rows) {  // first D2 of every D-wide row
        std::vector<bf16> r(size_t(rows) * D2);
        for (int i = 0; i < rows; ++i) std::copy_n(&v[size_t(i) * c.D], D2, &r[size_t(i) * D2]);
        return r;
    };
    out.prefix = cols(in.prefix, S);
    out.delta = cols(in.delta, S);
    out.blocks = cols(in.blocks, S * 8);
    out.res_norm_w.assign(in.res_norm_w.begin(), in.res_norm_w.begin() + D2);
    out.res_proj_w.assign(in.res_proj_w.begin(), in.res_proj_w.begin() + D2);
    out.input_norm_w.assign(in.input_norm_w.begin(), in.input_norm_w.begin() + D2);

    // new index -> old index of an E-wide (head-major) vector
    auto e_old = [&](int e2) { return (e2 / K2) * c.K + e2 % K2; };
    std::vector<int> n_old(size_t(o.N));
    for (int blk = 0; blk < 4; ++blk)  // q, k, v, g
        for (int e2 = 0; e2 < E2; ++e2) n_old[size_t(blk * E2 + e2)] = blk * E + e_old(e2);
    for (int f = 0; f < F2; ++f) n_old[size_t(o.col_fa() + f)] = c.col_fa() + f;
    for (int h = 0; h < H2; ++h) n_old[size_t(o.col_beta() + h)] = c.col_beta() + h;
    for (int p = 0; p < pad; ++p) n_old[size_t(o.min_N() + p)] = c.min_N() + p;
    out.in_proj_w.resize(size_t(o.N) * D2);
    for (int n = 0; n < o.N; ++n)
        std::copy_n(&in.in_proj_w[size_t(n_old[size_t(n)]) * c.D], D2, &out.in_proj_w[size_t(n) * D2]);

    out.f_b_w.resize(size_t(E2) * F2);
    for (int e2 = 0; e2 < E2; ++e2)
        std::copy_n(&in.f_b_w[size_t(e_old(e2)) * c.F], F2, &out.f_b_w[size_t(e2) * F2]);
    auto ch_old = [&](int ch2) { return (ch2 / E2) * E + e_old(ch2 % E2); };
    out.conv_w.resize(size_t(o.C) * c.W);
    for (int ch = 0; ch < o.C; ++ch)
        std::copy_n(&in.conv_w[size_t(ch_old(ch)) * c.W], c.W, &out.conv_w[size_t(ch) * c.W]);
    out.A_log.assign(in.A_log.begin(), in.A_log.begin() + H2);
    out.dt_bias.resize(size_t(E2));
    for (int e2 = 0; e2 < E2; ++e2) out.dt_bias[size_t(e2)] = in.dt_bias[size_t(e_old(e2))];
    out.o_norm_w.assign(in.o_norm_w.begin(), in.o_norm_w.begin() + K2);

    out.conv_state.resize(conv_size(o));
    for (int s = 0; s < o.slots; ++s)
        for (int j = 0; j < o.conv_len(); ++j)
            for (int ch = 0; ch < o.C; ++ch)
                out.conv_state[size_t(out.conv_at(s, j, ch))] = in.conv_state[size_t(in.conv_at(s, j, ch_old(ch)))];
    out.ssm_state.resize(ssm_size(o));
    for (int s = 0; s < o.slots; ++s)
        for (int h = 0; h < H2; ++h)
            for (int v = 0; v < K2; ++v)
                for (int k = 0; k < K2; ++k)
                    out.ssm_state[size_t(out.ssm_at(s, h, v, k))] = in.ssm_state[size_t(in.ssm_at(s, h, v, k))];
    out.state_indices = in.state_indices;
    out.num_accepted = in.num_accepted;
    out.validate_step();
    return out;
}

}  // namespace monokda::props
