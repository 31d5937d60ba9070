// The model shapes of SPEC §1, defined once: the production shape (Kimi-K3, TP8, one rank) that
// the GPU kernel is specialised on, and the small shape the CPU tests and fuzzers run thousands of.
// Config's presets, the plan's defaults, the launcher's validation and the kernel's compile-time
// constants all read these (constexpr, so device code can too).
#pragma once

namespace monokda {

// in_proj's rows as stored: q|k|v|g|f_a|beta, zero-padded to a multiple of 16 (SPEC §1)
constexpr int padded_in_proj_rows(int E, int F, int H) { return (4 * E + F + H + 15) / 16 * 16; }

struct ModelShape {
    int D, H, K, V, F, W;
    double eps, l2_eps, lower_bound;
    constexpr int E() const { return H * K; }                               // projection width
    constexpr int C() const { return 3 * E(); }                             // conv channels (q, k, v)
    constexpr int N() const { return padded_in_proj_rows(E(), F, H); }      // in_proj rows, padded
};

// SPEC §1's table.
inline constexpr ModelShape kProductionShape{7168, 12, 128, 128, 128, 4, 1e-5, 1e-6, -5.0};
static_assert(kProductionShape.D == 56 * 128, "D: 56 slices of 128 columns");
static_assert(kProductionShape.E() == 1536, "E = H·K");
static_assert(kProductionShape.K == kProductionShape.V, "K = V");
static_assert(kProductionShape.C() == 4608, "C = 3E");
static_assert(kProductionShape.N() == 6288, "N: q, k, v, g 1536 each, f_a 128, beta 12, 4 zero rows");
static_assert(kProductionShape.N() - (4 * kProductionShape.E() + kProductionShape.F + kProductionShape.H) == 4,
              "N's pad");
static_assert(kProductionShape.W == 4, "W");

// The "small" preset: every mechanism of the production shape at a size a CPU runs in milliseconds.
inline constexpr ModelShape kSmallShape{256, 2, 32, 32, 16, 4, 1e-5, 1e-6, -5.0};

}  // namespace monokda
