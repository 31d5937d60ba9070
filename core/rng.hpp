// A small deterministic generator (splitmix64 + Box-Muller), identical on every platform and
// library, so a seed names the same fixture everywhere.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace monokda {

struct Rng {
    static constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;  // the state's step
    // splitmix64's output function of a state (core/normal_draws.* evaluates it in bulk)
    static constexpr uint64_t mix(uint64_t z) {
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    uint64_t state;
    explicit Rng(uint64_t seed) : state(seed * kGamma + 0x632be59bd9b4e019ull) {}
    uint64_t next() { return mix(state += kGamma); }
    double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
    double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
    uint64_t below(uint64_t n) { return n ? next() % n : 0; }
    // Fisher–Yates, last element first: the one shuffle every seeded permutation here uses, so a
    // seed keeps naming the same fixture slots, reduction orders and schedules.
    template <class Vec>
    void shuffle(Vec& v) {
        for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[size_t(below(i))]);
    }
    double normal() {
        double u1 = uniform(), u2 = uniform();
        return normal_of(u1, u2);
    }
    // Box-Muller from two uniforms (core/normal_draws.hpp evaluates many of these faster, same values)
    static double normal_of(double u1, double u2) {
        if (u1 < 1e-300) u1 = 1e-300;
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
};

}  // namespace monokda
