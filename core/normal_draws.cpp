// The vector part of normal_draws (core/normal_draws.hpp): uniforms as Rng gives them, and
// sqrt(-2 log u1) cos(2 pi u2) by polynomials instead of libm, with a bound on the difference.
// Built with -fno-math-errno so that sqrt vectorises; no value here is a result by itself, each is
// checked against its bound by the caller.
#include "core/normal_draws.hpp"

#include <cmath>
#include <limits>

namespace monokda::detail {

namespace {

inline uint64_t bits_of(double d) { return __builtin_bit_cast(uint64_t, d); }
inline double double_of(uint64_t u) { return __builtin_bit_cast(double, u); }

// log u for u in (0, 1), relative error about 1e-15: u = m 2^k with m in [sqrt(1/2), sqrt(2)),
// log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172, the series to s^21 (remainder < 1e-18).
inline double log_approx(double u) {
    const uint64_t b = bits_of(u);
    const double e = double_of((b >> 52) | 0x4330000000000000ull) - 4503599627370496.0;  // biased exponent
    double m = double_of((b & 0x000fffffffffffffull) | 0x3ff0000000000000ull);         // [1, 2)
    const bool big = m > 1.4142135623730951;
    m *= big ? 0.5 : 1.0;
    const double k = e + (big ? 1.0 : 0.0) - 1023.0;
    const double f = m - 1.0;  // exact
    const double s = f / (2.0 + f), w = s * s;
    const double p =
        1.0 + w * (1.0 / 3 + w * (1.0 / 5 + w * (1.0 / 7 + w * (1.0 / 9 + w * (1.0 / 11 + w * (1.0 / 13 + w * (1.0 / 15 +
        w * (1.0 / 17 + w * (1.0 / 19 + w * (1.0 / 21))))))))));
    return k * 0.6931471805599453 + 2.0 * s * p;
}

// cos x for x in [0, 2 pi], absolute error about 1e-16: x = n pi/2 + r (Cody-Waite, the first part of
// pi/2 has 33 bits so n * it is exact and x - n * it is exact by Sterbenz), fdlibm's sin and cos
// kernels on |r| <= pi/4, the quadrant choosing one and the sign.
inline double cos_approx(double x) {
    const double t = x * 0.63661977236758134308 + 6755399441055744.0;  // round to nearest integer
    const uint64_t n = bits_of(t);
    const double nd = t - 6755399441055744.0;
    const double r = (x - nd * 1.57079632673412561417e+00) - nd * 6.07710050650619224932e-11;
    const double z = r * r;
    const double sn = r + r * z * (-1.66666666666666324348e-01 + z * (8.33333333332248946124e-03 +
                      z * (-1.98412698298579493134e-04 + z * (2.75573137070700676789e-06 +
                      z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)))));
    const double cs = 1.0 - 0.5 * z + z * z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 +
                      z * (2.48015872894767294178e-05 + z * (-2.75573143513906633035e-07 +
                      z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
    // quadrants 0..3: cos r, -sin r, -cos r, sin r (by masks: no 64-bit compare in SSE2)
    const uint64_t odd = uint64_t(0) - (n & 1);
    const uint64_t c = (bits_of(sn) & odd) | (bits_of(cs) & ~odd);
    return double_of(c ^ (((n + 1) & 2) << 62));
}

}  // namespace

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// wider vectors where the CPU has them (the values do not depend on it: each is checked)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
void approx_normals(uint64_t state, int n, double* u1, double* u2, double* z, double* err) {
    constexpr uint64_t g = Rng::kGamma;
    constexpr auto mix = Rng::mix;
    // the 53-bit integer to double in two exact parts (vector code has no 64-bit integer conversion)
    auto uniform = [](uint64_t x) {
        x >>= 11;
        const double hi = double_of((x >> 32) | 0x4330000000000000ull) - 4503599627370496.0;
        const double lo = double_of((x & 0xffffffffull) | 0x4330000000000000ull) - 4503599627370496.0;
        return (hi * 4294967296.0 + lo) * (1.0 / 9007199254740992.0);
    };
    for (int i = 0; i < n; ++i) {
        u1[i] = uniform(mix(state + uint64_t(2 * i + 1) * g));
        u2[i] = uniform(mix(state + uint64_t(2 * i + 2) * g));
    }
    for (int i = 0; i < n; ++i) {
        const double s = std::sqrt(-2.0 * log_approx(u1[i])), zi = s * cos_approx(6.283185307179586 * u2[i]);
        const double ei = 1e-11 * (1.0 + s);
        const bool zero = u1[i] == 0.0;  // selects of constants only, so that the loop stays branch-free
        z[i] = zi * (zero ? 0.0 : 1.0);
        err[i] = ei + (zero ? std::numeric_limits<double>::infinity() : 0.0);
    }
}

}  // namespace monokda::detail
