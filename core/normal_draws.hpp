// Many normal draws of the sequential generator, fast and with the same values.
//
// `normal_draws(rng, n, f)` returns v[i] = f(draw i), exactly what the sequential loop
// `for i: v[i] = f(rng.normal())` gives, and leaves rng where that loop leaves it. Two things make it
// fast without changing a bit:
//  - blocks in parallel: a draw takes two next() calls and splitmix64's state advances by a constant
//    per call, so each block of the sequence starts from a state computed directly;
//  - no libm in the common case: Rng::normal's z = sqrt(-2 log u1) cos(2 pi u2) is approximated in
//    vector code (approx_normals, polynomials within about 1e-15 of the true value; glibc's log and
//    cos are within an ulp or two) with a bound E = 1e-11 (1 + sqrt(-2 log u1)) on its distance from
//    the libm value: tens of thousands of times the distance measured over 10^8 draws (3.5e-16 (1 +
//    sqrt(-2 log u1)) at most; tests/emulator/test_fixture_digest.cpp checks it stays under 1/1000
//    of E). f must be non-decreasing (a rounding of mean + sd z with sd > 0 is): if f(z - E) and
//    f(z + E) are the same bits, every value in between, the libm draw among them, maps to those
//    bits. Else (about one draw in five million at the fixture's bf16 scales, three in a thousand
//    for f32) the draw is computed with libm exactly as Rng::normal does.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/rng.hpp"

namespace monokda {

namespace detail {

constexpr int kNormalChunk = 256;

// Draws 0..n-1 (n <= kNormalChunk) of a generator whose state is `state`: u1, u2 as Rng::uniform
// gives them, z an approximation of Rng::normal_of(u1, u2) and err a bound on its distance from it
// (z 0 and err infinite where u1 is 0, which Rng::normal clamps).
void approx_normals(uint64_t state, int n, double* u1, double* u2, double* z, double* err);

}  // namespace detail

// exact_draws, if given, receives the number of draws that needed libm (tests).
template <class T, class F>
std::vector<T> normal_draws(Rng& rng, size_t n, F&& f, size_t* exact_draws = nullptr) {
    constexpr uint64_t kGamma = Rng::kGamma;
    std::vector<T> v(n);
    const uint64_t s0 = rng.state;
    const int64_t block = 1 << 16, nblocks = int64_t((n + size_t(block) - 1) / size_t(block));
    size_t exact = 0;
#pragma omp parallel for schedule(static) if (nblocks > 1) reduction(+ : exact)
    for (int64_t b = 0; b < nblocks; ++b) {
        alignas(64) double u1[detail::kNormalChunk], u2[detail::kNormalChunk], z[detail::kNormalChunk],
            err[detail::kNormalChunk];
        T lo[detail::kNormalChunk], up[detail::kNormalChunk];
        const size_t hi = std::min(n, size_t((b + 1) * block));
        for (size_t i0 = size_t(b * block); i0 < hi; i0 += detail::kNormalChunk) {
            const int m = int(std::min(hi - i0, size_t(detail::kNormalChunk)));
            detail::approx_normals(s0 + uint64_t(2 * i0) * kGamma, m, u1, u2, z, err);
            for (int j = 0; j < m; ++j) {
                lo[j] = f(z[j] - err[j]);
                up[j] = f(z[j] + err[j]);
            }
            for (int j = 0; j < m; ++j) {
                if (std::memcmp(&lo[j], &up[j], sizeof(T)) == 0 && z[j] == z[j]) {
                    v[i0 + size_t(j)] = lo[j];
                } else {
                    v[i0 + size_t(j)] = f(Rng::normal_of(u1[j], u2[j]));
                    ++exact;
                }
            }
        }
    }
    rng.state = s0 + uint64_t(2 * n) * kGamma;
    if (exact_draws) *exact_draws = exact;
    return v;
}

}  // namespace monokda
