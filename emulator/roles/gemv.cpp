// The gemv role's bodies (SPEC §3 B, kernels/kda_gemv.hpp): in_proj for one group of rows, one x
// slice at a time as its XRDY lands, then the group's PROJ columns and flag.
#include "emulator/machine_impl.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace monokda::emu::detail {

// B for the group's columns: slice j's partial sums, added to the running sums in slice order.
void Machine::gemv_slice(int cta, int g, int j) {
    const StepInputs& in = *in_;
    Cta& c = ctas_[size_t(cta)];
    const int S = cfg_.S(), D = cfg_.D, w = plan_.params().slice_width, d0 = j * w;
    const int G = plan_.params().gemv_group_rows, n0 = g * G, nrb = (S + 7) / 8;
    // The eight rows' sums as two halves of four lanes (rows 0-3, 4-7), two weight rows at a time:
    // lane by lane the same operations in the same order as one eight-lane vector, but held in
    // registers (baseline x86-64 code keeps an eight-float vector in memory, a store-forward a term).
    std::vector<f4>& xlo = xlo_;  // scratch kept across calls (22k a k3 step)
    std::vector<f4>& xhi = xhi_;
    xlo.resize(size_t(w));
    xhi.resize(size_t(w));
    // a slice whose every read passed the checks once in this step reads the same stores again
    // (a later store to it would be a WRITE_CONFLICT), so later groups skip the checks
    const bool checked = c.x_checked[size_t(j)] != 0;
    for (int rb = 0; rb < nrb; ++rb) {
        for (int d = 0; d < w; ++d) {
            f4 lo{}, hi{};
            for (int l = 0; l < 8 && rb * 8 + l < S; ++l) {
                const float v = checked ? bf16::from_bits(uint16_t(mem_[SP_X][size_t(rb * 8 + l) * size_t(D) + size_t(d0 + d)].cur.bits)).to_float()
                                        : f(read_data(cta, SP_X, rb * 8 + l, d0 + d));
                if (l < 4) lo[l] = v; else hi[l - 4] = v;
            }
            xlo[size_t(d)] = lo;
            xhi[size_t(d)] = hi;
        }
        auto add = [&](int k, f4 lo, f4 hi) {
            const f8 part = {lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]};
            f8& acc = c.acc[size_t(k) * size_t(nrb) + size_t(rb)];
            acc = j == 0 ? part : acc + part;
        };
        int k = 0;
        for (; k + 1 < G; k += 2) {
            const bf16* wa = &in.in_proj_w[size_t(n0 + k) * size_t(D) + size_t(d0)];
            const bf16* wb = wa + D;
            const float a0 = f(wa[0]), b0 = f(wb[0]);
            f4 alo = xlo[0] * a0, ahi = xhi[0] * a0, blo = xlo[0] * b0, bhi = xhi[0] * b0;
            for (int d = 1; d < w; ++d) {
                const float ad = f(wa[d]), bd = f(wb[d]);
                alo = alo + xlo[size_t(d)] * ad;
                ahi = ahi + xhi[size_t(d)] * ad;
                blo = blo + xlo[size_t(d)] * bd;
                bhi = bhi + xhi[size_t(d)] * bd;
            }
            add(k, alo, ahi);
            add(k + 1, blo, bhi);
        }
        for (; k < G; ++k) {
            const bf16* wa = &in.in_proj_w[size_t(n0 + k) * size_t(D) + size_t(d0)];
            const float a0 = f(wa[0]);
            f4 alo = xlo[0] * a0, ahi = xhi[0] * a0;
            for (int d = 1; d < w; ++d) {
                const float ad = f(wa[d]);
                alo = alo + xlo[size_t(d)] * ad;
                ahi = ahi + xhi[size_t(d)] * ad;
            }
            add(k, alo, ahi);
        }
    }
    c.x_checked[size_t(j)] = 1;
}

void Machine::gemv_store(int cta, int g) {
    Cta& c = ctas_[size_t(cta)];
    const int S = cfg_.S(), G = plan_.params().gemv_group_rows, n0 = g * G, nrb = (S + 7) / 8;
    for (int k = 0; k < G; ++k)
        for (int s = 0; s < S; ++s)
            store_data(cta, SP_PROJ, s, n0 + k, bf16::round(c.acc[size_t(k) * size_t(nrb) + size_t(s / 8)][s % 8]));
    log_data(cta, SP_PROJ, n0, G);
    store_flag(cta, plan_.proj(g), true);
}
}  // namespace monokda::emu::detail
