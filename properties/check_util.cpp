// The property checks' comparison helpers (properties/check_util.hpp): the first difference in
// context, and a count of the rest.
#include "properties/check_util.hpp"

namespace monokda::props::detail {

void rows_match_all(Findings& f, const std::string& where, const Config& c, const StepOutputs<float>& a, size_t ra,
                    const StepOutputs<float>& b, size_t rb, unsigned mask, bool exact, double tol, int proj_cols) {
    const int D = c.D, E = c.E();
    auto one = [&](unsigned bit, const char* name, const std::vector<bf16>& x, const std::vector<bf16>& y, int w,
                   int n) {
        if (mask & bit) rows_match(f, std::string(name) + " " + where, &x[ra * size_t(w)], &y[rb * size_t(w)], n, exact, tol);
    };
    one(kPrefix, "prefix_out", a.prefix_out, b.prefix_out, D, D);
    if (mask & kBlocks)  // the bank is exact by construction (a copy of P' or the input)
        rows_match(f, "blocks " + where, &a.blocks[ra * 8 * size_t(D)], &b.blocks[rb * 8 * size_t(D)], 8 * D, true);
    one(kX, "x", a.x, b.x, D, D);
    one(kProj, "proj", a.proj, b.proj, c.N, proj_cols < 0 ? c.N : proj_cols);
    one(kG1, "g1", a.g1, b.g1, E, E);
    one(kQkv, "qkv", a.qkv, b.qkv, c.C, c.C);
    one(kO, "o", a.o, b.o, E, E);
    one(kCore, "core_out", a.core_out, b.core_out, E, E);
}

void conv_entries_match(Findings& f, const std::string& where, const StepInputs& la, const std::vector<bf16>& a,
                        int sa, int ja, const StepInputs& lb, const std::vector<bf16>& b, int sb, int jb, int n,
                        bool exact, double tol) {
    const int C = la.cfg.C;
    std::vector<bf16> ra(static_cast<size_t>(C)), rb(static_cast<size_t>(C));
    for (int j = 0; j < n; ++j) {
        for (int ch = 0; ch < C; ++ch) {
            ra[size_t(ch)] = a[size_t(la.conv_at(sa, ja + j, ch))];
            rb[size_t(ch)] = b[size_t(lb.conv_at(sb, jb + j, ch))];
        }
        rows_match(f, "conv_state " + where + " slot " + std::to_string(sa) + " entry " + std::to_string(ja + j) +
                          (sa != sb || ja != jb ? " (expected: slot " + std::to_string(sb) + " entry " + std::to_string(jb + j) + ")" : ""),
                   ra.data(), rb.data(), C, exact, tol);
    }
}

void ssm_slot_match(Findings& f, const std::string& where, const Config& c, const std::vector<float>& a, int sa,
                    const std::vector<float>& b, int sb, bool exact, double rel) {
    const size_t head = size_t(c.V) * c.K;
    for (int h = 0; h < c.H; ++h)
        states_match(f, "ssm_state " + where + " slot " + std::to_string(sa) + " head " + std::to_string(h) +
                            (sa != sb ? " (expected: slot " + std::to_string(sb) + ")" : ""),
                     &a[(size_t(sa) * c.H + h) * head], &b[(size_t(sb) * c.H + h) * head], int(head), exact, rel);
}

void outputs_identical(Findings& f, const Config& c, const StepOutputs<float>& a, const StepOutputs<float>& b) {
    for (int r = 0; r < c.R; ++r)
        for (int t = 0; t < c.L; ++t) {
            size_t s = size_t(r) * c.L + t;
            rows_match_all(f, at(r, t), c, a, s, b, s, kAllRows, true);
        }
    StepInputs layout;
    layout.cfg = c;
    for (int s = 0; s < c.slots; ++s) {
        conv_entries_match(f, "", layout, a.conv_state, s, 0, layout, b.conv_state, s, 0, c.conv_len(), true);
        ssm_slot_match(f, "", c, a.ssm_state, s, b.ssm_state, s, true);
    }
}

void null_outputs(Findings& f, const StepInputs& in, const StepOutputs<float>& out, int r) {
    const Config& c = in.cfg;
    const int E = c.E();
    for (int t = 0; t < c.L; ++t) {
        const size_t s = size_t(r) * c.L + t;
        for (int e = 0; e < E; ++e) {
            const bf16 o = out.o[s * E + e], y = out.core_out[s * E + e];
            if (o.bits != 0) {
                f.add("o " + at(r, t) + " col " + std::to_string(e) + ": " + hex16(o) + ", expected +0 (no initial state)");
                break;
            }
            const uint16_t want = zero_core_bits(in.o_norm_w[size_t(e % c.V)]);
            if (y.bits != want) {
                f.add("core_out " + at(r, t) + " col " + std::to_string(e) + ": " + hex16(y) + ", expected " +
                      hex16(bf16::from_bits(want)) + " (step F on o = +0)");
                break;
            }
        }
    }
}

}  // namespace monokda::props::detail
