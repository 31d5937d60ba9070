// Step E (recurrence, #6): decay first, delta rule, per-token state writes, the initial state from
// column a-1, null slots.
#include <doctest/doctest.h>

#include <cmath>

#include "core/rng.hpp"
#include "reference/reference.hpp"
#include "tests/reference/tiny_step.hpp"

using namespace monokda;
using namespace monokda::test;

namespace {

struct RecIn {
    StepInputs in;
    std::vector<bf16> qkv, proj, g1;
};

// R requests x L tokens, H heads of K = V; qkv/proj/g1 zero, beta_raw = -100 (beta = 0 exactly).
RecIn rec_step(int H, int K, int R, int L) {
    RecIn s;
    s.in = zero_inputs(tiny_config(4, H, K, 1, R, L, 1));
    const Config& c = s.in.cfg;
    s.qkv.assign(size_t(c.S() * c.C), B(0));
    s.proj.assign(size_t(c.S() * c.N), B(0));
    s.g1.assign(size_t(c.S() * c.E()), B(0));
    for (int t = 0; t < c.S(); ++t)
        for (int h = 0; h < H; ++h) s.proj[size_t(t * c.N + c.col_beta() + h)] = B(-100);
    return s;
}

struct RecOut {
    std::vector<bf16> o;
    std::vector<float> state;
};

RecOut run_rec(const RecIn& s) {
    RecOut o;
    ref::recurrence<float>(s.in, ReductionOrder{}, s.qkv, s.proj, s.g1, o.o, o.state);
    return o;
}

bf16& q_at(RecIn& s, int row, int h, int k) { return s.qkv[size_t(row * s.in.cfg.C + h * s.in.cfg.K + k)]; }
bf16& k_at(RecIn& s, int row, int h, int k) { return s.qkv[size_t(row * s.in.cfg.C + s.in.cfg.E() + h * s.in.cfg.K + k)]; }
bf16& v_at(RecIn& s, int row, int h, int v) { return s.qkv[size_t(row * s.in.cfg.C + 2 * s.in.cfg.E() + h * s.in.cfg.V + v)]; }

}  // namespace

TEST_SUITE("reference") {

TEST_CASE("beta = 0 gives pure decay, per key column, one state written per token") {
    RecIn s = rec_step(2, 4, 1, 3);
    StepInputs& in = s.in;
    const Config& c = in.cfg;
    // gate[k] = lb * sigmoid(exp(0) * (0 + dt_bias[h*K + k]))
    for (int e = 0; e < c.E(); ++e) in.dt_bias[size_t(e)] = 0.5f * float(e) - 1.5f;
    for (size_t i = 0; i < in.ssm_state.size(); ++i) in.ssm_state[i] = 0.01f * float(i % 37) - 0.1f;
    for (int t = 0; t < 3; ++t)
        for (int h = 0; h < 2; ++h) q_at(s, t, h, 0) = B(1);
    RecOut o = run_rec(s);
    const int init = in.idx(0, 2);  // num_accepted = L: the last column
    for (int t = 0; t < 3; ++t) {
        const int slot = in.idx(0, t);
        for (int h = 0; h < 2; ++h)
            for (int v = 0; v < 4; ++v)
                for (int k = 0; k < 4; ++k) {
                    const float dt = in.dt_bias[size_t(h * 4 + k)];
                    const float decay = std::exp(-5.0f * (1.0f / (1.0f + std::exp(-dt))));
                    float want = in.ssm_state[size_t(in.ssm_at(init, h, v, k))];
                    for (int i = 0; i <= t; ++i) want = want * decay;
                    CHECK(o.state[size_t(in.ssm_at(slot, h, v, k))] == doctest::Approx(want).epsilon(1e-6));
                    // q = e_0, K^-1/2 = 1/2: o[v] = S[v, 0] / sqrt(1 + 1e-6) / 2
                    if (k == 0) {
                        const bf16 ov = o.o[size_t(t * c.E() + h * 4 + v)];
                        CHECK(ulps(ov, bf16::round(double(want) / std::sqrt(1 + 1e-6) / 2)) <= 1);
                    }
                }
    }
}

TEST_CASE("the gate stays in [lb, 0] and reaches both ends") {
    for (double lb : {-5.0, -2.0}) {
        CAPTURE(lb);
        RecIn s = rec_step(2, 8, 1, 1);
        StepInputs& in = s.in;
        in.cfg.lower_bound = lb;
        const Config& c = in.cfg;
        Rng rng(3);
        for (auto& a : in.A_log) a = float(rng.uniform(-2, 5));
        for (auto& d : in.dt_bias) d = float(rng.normal() * 4);
        for (int e = 0; e < c.E(); ++e) s.g1[size_t(e)] = B(float(rng.normal() * 10));
        s.g1[0] = B(1000);    // sigmoid -> 1: gate = lb
        s.g1[1] = B(-1000);   // sigmoid -> 0: gate = -0
        std::fill(in.ssm_state.begin(), in.ssm_state.end(), 1.0f);
        RecOut o = run_rec(s);
        // after one token with beta = 0, S[v, k] = exp(gate[k])
        const int slot = in.idx(0, 0);
        float lo = 2, hi = -1;
        for (int h = 0; h < 2; ++h)
            for (int k = 0; k < 8; ++k) {
                const float g = o.state[size_t(in.ssm_at(slot, h, 0, k))];
                CHECK(g >= std::exp(float(lb)));
                CHECK(g <= 1.0f);
                lo = std::min(lo, g);
                hi = std::max(hi, g);
            }
        CHECK(lo == std::exp(float(lb)));
        CHECK(hi == 1.0f);
    }
}

TEST_CASE("num_accepted picks the initial state from column a-1") {
    for (int a = 1; a <= 4; ++a) {
        CAPTURE(a);
        RecIn s = rec_step(1, 2, 2, 4);
        StepInputs& in = s.in;
        const Config& c = in.cfg;
        // decay 1 (gate -0) and beta 0: the state is carried unchanged into every written slot
        for (auto& g : s.g1) g = B(-100);
        for (int slot = 0; slot < c.slots; ++slot)
            for (int i = 0; i < 4; ++i) in.ssm_state[size_t(slot * 4 + i)] = float(slot) + 0.25f * float(i);
        in.num_accepted = {a, 5 - a};
        RecOut o = run_rec(s);
        for (int r = 0; r < 2; ++r) {
            const int init = in.idx(r, in.num_accepted[size_t(r)] - 1);
            for (int t = 0; t < 4; ++t)
                for (int i = 0; i < 4; ++i)
                    CHECK(o.state[size_t(in.idx(r, t) * 4 + i)] == float(init) + 0.25f * float(i));
        }
    }
}

TEST_CASE("a request whose initial slot is null outputs +0 and writes no state") {
    for (int none : {0, -1}) {
        CAPTURE(none);
        RecIn s = rec_step(2, 2, 2, 3);
        StepInputs& in = s.in;
        const Config& c = in.cfg;
        Rng rng(9);
        for (auto& x : s.qkv) x = B(float(rng.normal()));
        for (auto& x : s.proj) x = B(float(rng.normal()));
        for (auto& x : in.ssm_state) x = float(rng.normal());
        // request 0: initial column a-1 = 1 is null, the other columns keep live slots
        in.num_accepted = {2, 3};
        in.state_indices[1] = none;
        RecOut o = run_rec(s);
        for (int t = 0; t < 3; ++t)
            for (int e = 0; e < c.E(); ++e) CHECK(o.o[size_t(t * c.E() + e)].bits == 0x0000);
        for (int slot : {in.idx(0, 0), in.idx(0, 2)})
            for (int i = 0; i < c.H * c.V * c.K; ++i)
                CHECK(o.state[size_t(in.ssm_at(slot, 0, 0, 0)) + size_t(i)] == in.ssm_state[size_t(in.ssm_at(slot, 0, 0, 0)) + size_t(i)]);
        // request 1 is live: its output is not all zero and its slots are written
        bool any = false;
        for (int e = 0; e < c.S() / 2 * c.E(); ++e) any = any || o.o[size_t(3 * c.E() + e)].bits != 0;
        CHECK(any);
        CHECK(o.state[size_t(in.ssm_at(in.idx(1, 0), 0, 0, 0))] != in.ssm_state[size_t(in.ssm_at(in.idx(1, 0), 0, 0, 0))]);
    }
}

TEST_CASE("K = V = 1: the recurrence follows the scalar delta rule token by token") {
    RecIn s = rec_step(2, 1, 1, 4);
    StepInputs& in = s.in;
    const Config& c = in.cfg;
    Rng rng(21);
    for (auto& x : s.qkv) x = B(float(rng.normal()));
    for (auto& g : s.g1) g = B(float(rng.normal()));
    for (int t = 0; t < 4; ++t)
        for (int h = 0; h < 2; ++h) s.proj[size_t(t * c.N + c.col_beta() + h)] = B(float(rng.normal()));
    in.A_log = {0.3f, -1.2f};
    in.dt_bias = {0.7f, -0.4f};
    for (auto& x : in.ssm_state) x = float(rng.normal());
    RecOut o = run_rec(s);
    auto sig = [](float z) { return 1.0f / (1.0f + std::exp(-z)); };
    for (int h = 0; h < 2; ++h) {
        float S = in.ssm_state[size_t(in.ssm_at(in.idx(0, 3), h, 0, 0))];
        for (int t = 0; t < 4; ++t) {
            const float q = F(q_at(s, t, h, 0)), k = F(k_at(s, t, h, 0)), v = F(v_at(s, t, h, 0));
            const float qh = q / std::sqrt(q * q + 1e-6f) * 1.0f, kh = k / std::sqrt(k * k + 1e-6f);
            const float gate = -5.0f * sig(std::exp(in.A_log[size_t(h)]) * (F(s.g1[size_t(t * 2 + h)]) + in.dt_bias[size_t(h)]));
            const float beta = sig(F(s.proj[size_t(t * c.N + c.col_beta() + h)]));
            S = S * std::exp(gate);
            const float u = (v - S * kh) * beta;
            S = S + u * kh;
            // the same f32 operations in the same order: bit-identical
            CHECK(o.state[size_t(in.ssm_at(in.idx(0, t), h, 0, 0))] == S);
            CHECK(o.o[size_t(t * 2 + h)].bits == bf16::round(S * qh).bits);
        }
    }
}

TEST_CASE("o and ssm_state match an independent double model of step E") {
    RecIn s = rec_step(2, 8, 2, 3);
    StepInputs& in = s.in;
    const Config& c = in.cfg;
    Rng rng(77);
    for (auto& x : s.qkv) x = B(float(rng.normal()));
    for (auto& x : s.proj) x = B(float(rng.normal()));
    for (auto& x : s.g1) x = B(float(rng.normal()));
    for (auto& x : in.A_log) x = float(rng.uniform(-2, 1));
    for (auto& x : in.dt_bias) x = float(rng.normal() * 0.5);
    for (auto& x : in.ssm_state) x = float(rng.normal() * 0.1);
    in.num_accepted = {2, 3};
    RecOut o = run_rec(s);
    const int K = c.K, V = c.V, E = c.E();
    int64_t same = 0, total = 0;
    for (int r = 0; r < 2; ++r)
        for (int h = 0; h < 2; ++h) {
            std::vector<double> S(size_t(V * K));
            const int init = in.idx(r, in.num_accepted[size_t(r)] - 1);
            for (int i = 0; i < V * K; ++i) S[size_t(i)] = in.ssm_state[size_t(in.ssm_at(init, h, 0, 0)) + size_t(i)];
            for (int t = 0; t < 3; ++t) {
                const int row = r * 3 + t;
                double sq = 0, sk = 0;
                for (int k = 0; k < K; ++k) {
                    sq += double(F(q_at(s, row, h, k))) * F(q_at(s, row, h, k));
                    sk += double(F(k_at(s, row, h, k))) * F(k_at(s, row, h, k));
                }
                std::vector<double> qh(static_cast<size_t>(K)), kh(static_cast<size_t>(K));
                for (int k = 0; k < K; ++k) {
                    qh[size_t(k)] = F(q_at(s, row, h, k)) / std::sqrt(sq + 1e-6) / std::sqrt(double(K));
                    kh[size_t(k)] = F(k_at(s, row, h, k)) / std::sqrt(sk + 1e-6);
                    const double z = std::exp(double(in.A_log[size_t(h)])) *
                                     (F(s.g1[size_t(row * E + h * K + k)]) + double(in.dt_bias[size_t(h * K + k)]));
                    const double decay = std::exp(-5.0 / (1 + std::exp(-z)));
                    for (int v = 0; v < V; ++v) S[size_t(v * K + k)] *= decay;
                }
                const double beta = 1 / (1 + std::exp(-double(F(s.proj[size_t(row * c.N + c.col_beta() + h)]))));
                for (int v = 0; v < V; ++v) {
                    double kS = 0;
                    for (int k = 0; k < K; ++k) kS += S[size_t(v * K + k)] * kh[size_t(k)];
                    const double u = (F(v_at(s, row, h, v)) - kS) * beta;
                    for (int k = 0; k < K; ++k) S[size_t(v * K + k)] += u * kh[size_t(k)];
                }
                for (int v = 0; v < V; ++v) {
                    double ov = 0;
                    for (int k = 0; k < K; ++k) ov += S[size_t(v * K + k)] * qh[size_t(k)];
                    const bf16 want = bf16::round(ov), got = o.o[size_t(row * E + h * V + v)];
                    CHECK(ulps(got, want) <= 1);
                    same += got.bits == want.bits;
                    ++total;
                }
                const size_t base = size_t(in.ssm_at(in.idx(r, t), h, 0, 0));
                for (int i = 0; i < V * K; ++i)
                    CHECK(o.state[base + size_t(i)] == doctest::Approx(S[size_t(i)]).epsilon(1e-5).scale(0.01));
            }
        }
    CHECK(double(same) / double(total) >= 0.97);
}
}
