// The fixture generator draws its large tensors in parallel blocks and mostly without libm
// (core/normal_draws.hpp); a seed must still name the same values as the sequential generator did.
// Digests recorded from the sequential generator, before the draws went parallel; the k3 one is checked in
// test_k3.cpp, where that fixture is built anyway.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fixture_gen.hpp"
#include "core/normal_draws.hpp"
#include "emu_util.hpp"

using namespace monokda;

TEST_CASE("a seed names the same fixture as the sequential generator") {
    struct Case { int R, L, nb; bool bw; ConvLayout lay; int nulls; uint64_t seed; const char* digest; };
    const Case cases[] = {
        {2, 4, 4, false, ConvLayout::sd, 0, 1, "4c9554b1ca1707dc"},
        {2, 4, 4, false, ConvLayout::sd, 0, 2, "d4176403fc1d99bf"},
        {3, 3, 7, true, ConvLayout::ds, 1, 9, "b9c3492ef9e72b18"},
    };
    for (const Case& k : cases) {
        Config c = Config::preset("small");
        c.R = k.R; c.L = k.L; c.nb = k.nb; c.block_write = k.bw; c.conv_layout = k.lay; c.seed = k.seed;
        FixtureOptions fo;
        fo.null_requests = k.nulls;
        CHECK(emu::inputs_digest(make_fixture(c, fo)) == k.digest);
    }
}

// normal_draws (core/normal_draws.hpp) skips libm where its approximation, widened by a bound,
// cannot round to other bits; the values must be the sequential loop's, bit for bit.
TEST_CASE("normal_draws gives the sequential generator's values") {
    const size_t n = size_t(1) << 20;  // 16 parallel blocks
    for (uint64_t seed : {1ull, 0x5eed0000beefull}) {  // far apart: near seeds are shifts of one stream
        auto bf = [](double mean, double sd) {
            return [=](double z) { return bf16::round(float(mean + sd * z)); };
        };
        auto same = [&](auto f, auto tag) {
            using T = decltype(tag);
            Rng a(seed), b(seed);
            a.next();  // an odd start, as after a row's loudness draw
            b.next();
            size_t exact = 0;
            const std::vector<T> v = normal_draws<T>(a, n, f, &exact);
            size_t differ = 0;
            for (size_t i = 0; i < n; ++i) {
                const T w = f(b.normal());
                differ += std::memcmp(&v[i], &w, sizeof(T)) != 0;
            }
            CHECK(differ == 0);
            CHECK(a.state == b.state);
            return exact;
        };
        // bf16 at the fixture's scales: libm is needed about once in a million draws
        CHECK(same(bf(0.0, 1.0 / std::sqrt(7168.0)), bf16{}) < n / 10000);
        CHECK(same(bf(1.0, 0.1), bf16{}) < n / 10000);
        CHECK(same(bf(0.0, 10.0), bf16{}) < n / 10000);
        // f32 keeps 24 bits: more draws near a rounding boundary (about 3 in 1000)
        CHECK(same([](double z) { return float(0.1 * z); }, float{}) < n / 100);
    }
}

TEST_CASE("normal_draws' approximation lies far inside its bound") {
    const int C = detail::kNormalChunk;
    double u1[C], u2[C], z[C], err[C];
    uint64_t state = Rng(3).state;
    double worst = 0;  // |approximation - libm| / bound
    for (int it = 0; it < 4000; ++it, state += uint64_t(2 * C) * 0x9e3779b97f4a7c15ull) {
        detail::approx_normals(state, C, u1, u2, z, err);
        for (int j = 0; j < C; ++j) worst = std::max(worst, std::fabs(z[j] - Rng::normal_of(u1[j], u2[j])) / err[j]);
    }
    MESSAGE("worst distance from libm: " << worst << " of the bound");
    CHECK(worst < 1e-3);
}
