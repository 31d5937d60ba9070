// bf16 rounding (core/bf16.hpp): to nearest, ties to even, subnormals, signed zeros, Inf and NaN, and
// from double in one rounding.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "core/bf16.hpp"

using monokda::bf16;

TEST_SUITE("core") {
TEST_CASE("bf16 rounds to nearest, ties to even") {
    // 1 + 2^-8 lies exactly halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0)
    CHECK(bf16::round(1.0f + std::ldexp(1.0f, -8)).bits == 0x3f80);
    // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even): goes up
    CHECK(bf16::round(1.0f + 3 * std::ldexp(1.0f, -8)).bits == 0x3f82);
    // just above the tie rounds up
    CHECK(bf16::round(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)).bits == 0x3f81);
    CHECK(bf16::round(-1.5f).bits == 0xbfc0);
}

TEST_CASE("bf16 keeps subnormals, signed zeros, Inf and NaN") {
    float sub = std::ldexp(1.0f, -133);  // smallest bf16 subnormal
    CHECK(bf16::round(sub).bits == 0x0001);
    CHECK(bf16::round(sub / 2).bits == 0x0000);            // tie to even: 0
    CHECK(bf16::round(sub * 1.5f).bits == 0x0002);         // tie between 1 and 2: even
    CHECK(bf16::round(-0.0f).bits == 0x8000);
    CHECK(bf16::round(std::numeric_limits<float>::infinity()).bits == 0x7f80);
    CHECK(bf16::round(-std::numeric_limits<float>::infinity()).bits == 0xff80);
    CHECK(bf16::round(std::numeric_limits<float>::max()).bits == 0x7f80);  // overflow to Inf
    bf16 n = bf16::round(std::numeric_limits<float>::quiet_NaN());
    CHECK(std::isnan(n.to_float()));
    // a signalling NaN whose payload lives only in the low bits must not become Inf
    float snan;
    uint32_t u = 0x7f800001u;
    memcpy(&snan, &u, 4);
    CHECK(std::isnan(bf16::round(snan).to_float()));
}

TEST_CASE("bf16 from double rounds once") {
    // d lies just above the bf16 tie 1 + 2^-8, by less than an f32 ulp: rounding to f32 first would
    // land exactly on the tie and go to even (down); one rounding must go up.
    double d = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
    CHECK(bf16::round(float(d)).bits == 0x3f80);
    CHECK(bf16::round(d).bits == 0x3f81);
    double e = 1.0 + std::ldexp(1.0, -8) - std::ldexp(1.0, -40);
    CHECK(bf16::round(e).bits == 0x3f80);
    CHECK(bf16::round(1e300).bits == 0x7f80);
    CHECK(bf16::round(-1e300).bits == 0xff80);
    CHECK(bf16::round(std::ldexp(1.0, -140)).bits == 0x0000);
    CHECK(bf16::round(std::ldexp(1.0, -133) * 0.75).bits == 0x0001);
    // every exactly representable value round-trips
    for (uint32_t b = 0; b < 0x10000; b += 7) {
        bf16 x = bf16::from_bits(uint16_t(b));
        if (std::isnan(x.to_float())) continue;
        CHECK(bf16::round(x.to_double()).bits == x.bits);
        CHECK(bf16::round(x.to_float()).bits == x.bits);
    }
}
}
