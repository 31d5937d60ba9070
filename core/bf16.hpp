// bf16: the storage type of every hand-off in SPEC §3. One definition, usable from host and device code.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define MONOKDA_HD __host__ __device__ __forceinline__
#else
#define MONOKDA_HD inline
#endif

namespace monokda {

MONOKDA_HD uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
MONOKDA_HD float f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

struct bf16 {
    uint16_t bits;

    static MONOKDA_HD bf16 from_bits(uint16_t b) { bf16 r; r.bits = b; return r; }

    // Round to nearest, ties to even. NaN stays NaN (quietened, sign kept); overflow goes to Inf
    // through the carry into the exponent, as IEEE rounding does.
    static MONOKDA_HD bf16 round(float f) {
        uint32_t u = f32_bits(f);
        if ((u & 0x7fffffffu) > 0x7f800000u) return from_bits(uint16_t((u >> 16) | 0x0040u));
        u += 0x7fffu + ((u >> 16) & 1u);
        return from_bits(uint16_t(u >> 16));
    }

    MONOKDA_HD float to_float() const { return f32_from_bits(uint32_t(bits) << 16); }
    MONOKDA_HD explicit operator float() const { return to_float(); }

#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
    // Round a double straight to bf16 (one rounding, as the f64 oracle needs). Rounding to f32 first
    // with round-to-odd keeps enough bits that the second, nearest-even rounding is exact.
    static bf16 round(double d) {
        if (d != d) return round(float(d));
        float f = float(d);  // nearest
        double back = double(f);
        if (back != d) {
            // step f towards zero if nearest went away from zero, then make the last bit sticky (odd)
            double ad = d < 0 ? -d : d, ab = back < 0 ? -back : back;
            uint32_t u = f32_bits(f);
            if (ab > ad) u -= 1;  // magnitude one ulp down; Inf - 1 is FLT_MAX, as truncation gives
            u |= 1u;
            f = f32_from_bits(u);
        }
        return round(f);
    }
    double to_double() const { return double(to_float()); }
#endif
};

// bf16 ulp distance on the ordered integer line (+0 and -0 are 0 apart); NaN against non-NaN is huge.
inline int32_t bf16_ordered(uint16_t b) { return (b & 0x8000) ? -int32_t(b & 0x7fff) : int32_t(b); }

// One bf16 ulp at a row's scale (its largest magnitude), the unit of SPEC §5's tolerances:
// 2^(exponent - 7); 0 for a zero row.
inline double bf16_row_ulp(double scale) { return scale > 0 ? std::ldexp(1.0, std::ilogb(scale) - 7) : 0.0; }

}  // namespace monokda
