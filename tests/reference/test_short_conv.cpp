// Step D (spec-mode short conv, #5): the window from offset a-1, the taps oldest first, SiLU, and
// the once-per-step conv_state write of raw inputs, in both layouts.
#include <doctest/doctest.h>

#include "core/rng.hpp"
#include "reference/reference.hpp"
#include "tests/reference/tiny_step.hpp"

using namespace monokda;
using namespace monokda::test;

namespace {

// A step with R = 2, L = 4, W = 4 (conv_len 6), H = 1, K = 2 (C = 6). Entry j of the slot's
// channel c holds 10*j + c + 1 (slot-dependent sign), proj conv inputs hold -(10*t + c + 1) / 4.
StepInputs conv_step(ConvLayout layout) {
    Config c = tiny_config(4, 1, 2, 1, 2, 4, 1);
    c.conv_layout = layout;
    StepInputs in = zero_inputs(c);
    for (int slot = 0; slot < c.slots; ++slot)
        for (int j = 0; j < c.conv_len(); ++j)
            for (int ch = 0; ch < c.C; ++ch)
                in.conv_state[size_t(in.conv_at(slot, j, ch))] = B(float(slot % 2 ? 1 : -1) * float(10 * j + ch + 1) / 8);
    return in;
}

std::vector<bf16> conv_inputs(const Config& c) {
    std::vector<bf16> proj(size_t(c.S() * c.N), B(7.0f));  // non-conv columns: decoys
    for (int s = 0; s < c.S(); ++s)
        for (int ch = 0; ch < c.C; ++ch) proj[size_t(s * c.N + ch)] = B(-float(10 * s + ch + 1) / 4);
    return proj;
}

void set_taps(StepInputs& in, std::initializer_list<float> taps) {
    for (int ch = 0; ch < in.cfg.C; ++ch) {
        int j = 0;
        for (float t : taps) in.conv_w[size_t(ch * in.cfg.W + j++)] = t;
    }
}

struct ConvOut {
    std::vector<bf16> qkv, state;
};

ConvOut conv(const StepInputs& in, const std::vector<bf16>& proj) {
    ConvOut o;
    ref::short_conv<float>(in, proj, o.qkv, o.state);
    return o;
}

}  // namespace

TEST_SUITE("reference") {

TEST_CASE("tap on the newest input gives SiLU of the current input") {
    StepInputs in = conv_step(ConvLayout::sd);
    const Config& c = in.cfg;
    set_taps(in, {0, 0, 0, 1});
    std::vector<bf16> proj = conv_inputs(c);
    ConvOut o = conv(in, proj);
    for (int s = 0; s < c.S(); ++s)
        for (int ch = 0; ch < c.C; ++ch)
            CHECK(o.qkv[size_t(s * c.C + ch)].bits == silu_bf16(-double(10 * s + ch + 1) / 4).bits);
}

TEST_CASE("tap on the oldest entry reads the window from offset a-1") {
    for (ConvLayout layout : {ConvLayout::sd, ConvLayout::ds}) {
        for (int a = 1; a <= 4; ++a) {
            CAPTURE(a);
            StepInputs in = conv_step(layout);
            const Config& c = in.cfg;
            set_taps(in, {1, 0, 0, 0});
            in.num_accepted = {a, 5 - a};
            std::vector<bf16> proj = conv_inputs(c);
            ConvOut o = conv(in, proj);
            for (int r = 0; r < 2; ++r) {
                const int ar = in.num_accepted[size_t(r)], slot = in.idx(r, 0);
                const double sign = slot % 2 ? 1 : -1;
                for (int t = 0; t < 4; ++t)
                    for (int ch = 0; ch < c.C; ++ch) {
                        // seq = [s[a-1], s[a], s[a+1], x_0, ...]: token t's oldest tap is seq[t]
                        const int j = ar - 1 + t;  // entry of the state, while inside the window
                        const double want = t < 3 ? sign * double(10 * j + ch + 1) / 8
                                                  : -double(10 * (r * 4 + t - 3) + ch + 1) / 4;
                        CHECK(o.qkv[size_t((r * 4 + t) * c.C + ch)].bits == silu_bf16(want).bits);
                    }
            }
        }
    }
}

TEST_CASE("general W: the window is the W-1 entries from offset a-1, the state keeps W-2 old entries") {
    for (int W : {2, 3, 5}) {
        for (int a = 1; a <= 3; ++a) {
            CAPTURE(W);
            CAPTURE(a);
            Config c = tiny_config(4, 1, 1, 1, 1, 3, 1, W);  // C = 3, conv_len = W - 2 + 3
            StepInputs in = zero_inputs(c);
            for (int j = 0; j < c.conv_len(); ++j)
                for (int ch = 0; ch < 3; ++ch) in.conv_state[size_t(in.conv_at(1, j, ch))] = B(float(10 * j + ch + 1) / 8);
            for (int ch = 0; ch < 3; ++ch) in.conv_w[size_t(ch * W)] = 1;  // the oldest tap only
            in.num_accepted = {a};
            std::vector<bf16> proj(size_t(c.S() * c.N), B(0));
            for (int t = 0; t < 3; ++t)
                for (int ch = 0; ch < 3; ++ch) proj[size_t(t * c.N + ch)] = B(-float(10 * t + ch + 1) / 4);
            ConvOut o = conv(in, proj);
            for (int t = 0; t < 3; ++t)
                for (int ch = 0; ch < 3; ++ch) {
                    // seq = [s[a-1] .. s[a+W-3], x_0 ..]; token t's oldest tap is seq[t]
                    const double want = t < W - 1 ? double(10 * (a - 1 + t) + ch + 1) / 8 : -double(10 * (t - (W - 1)) + ch + 1) / 4;
                    CHECK(o.qkv[size_t(t * 3 + ch)].bits == silu_bf16(want).bits);
                }
            for (int ch = 0; ch < 3; ++ch) {
                for (int j = 0; j < W - 2; ++j)
                    CHECK(o.state[size_t(in.conv_at(1, j, ch))].bits == in.conv_state[size_t(in.conv_at(1, a + j, ch))].bits);
                for (int t = 0; t < 3; ++t)
                    CHECK(o.state[size_t(in.conv_at(1, W - 2 + t, ch))].bits == proj[size_t(t * c.N + ch)].bits);
            }
        }
    }
}

TEST_CASE("taps are summed oldest first, left to right, in f32") {
    StepInputs in = conv_step(ConvLayout::sd);
    const Config& c = in.cfg;
    // w = [1, 2, 3, 4] on the window of token 0 with a = 1: s[0], s[1], s[2], x_0
    set_taps(in, {1, 2, 3, 4});
    in.num_accepted = {1, 1};
    std::vector<bf16> proj = conv_inputs(c);
    ConvOut o = conv(in, proj);
    for (int ch = 0; ch < c.C; ++ch) {
        const int slot = in.idx(0, 0);
        const float sgn = slot % 2 ? 1.0f : -1.0f;
        float acc = sgn * float(ch + 1) / 8 * 1.0f;
        acc = acc + sgn * float(10 + ch + 1) / 8 * 2.0f;
        acc = acc + sgn * float(20 + ch + 1) / 8 * 3.0f;
        acc = acc + (-float(ch + 1) / 4) * 4.0f;
        CHECK(o.qkv[size_t(ch)].bits == silu_bf16(acc).bits);
    }
}

TEST_CASE("conv_state write: W-2 entries from offset a, then the step's raw inputs, once per step") {
    for (ConvLayout layout : {ConvLayout::sd, ConvLayout::ds}) {
        for (int a = 1; a <= 4; ++a) {
            CAPTURE(a);
            StepInputs in = conv_step(layout);
            const Config& c = in.cfg;
            set_taps(in, {0.5f, -1, 2, 0.25f});
            in.num_accepted = {a, 5 - a};
            std::vector<bf16> proj = conv_inputs(c);
            // inputs that are not exact in bf16 arithmetic: the state must hold the raw bits
            for (int s = 0; s < c.S(); ++s) proj[size_t(s * c.N)] = bf16::from_bits(uint16_t(0x3f81 + s));
            ConvOut o = conv(in, proj);
            std::vector<bool> written(size_t(c.slots), false);
            for (int r = 0; r < 2; ++r) {
                const int slot = in.idx(r, 0), ar = in.num_accepted[size_t(r)];
                written[size_t(slot)] = true;
                for (int ch = 0; ch < c.C; ++ch) {
                    for (int j = 0; j < 2; ++j)
                        CHECK(o.state[size_t(in.conv_at(slot, j, ch))].bits ==
                              in.conv_state[size_t(in.conv_at(slot, ar + j, ch))].bits);
                    for (int t = 0; t < 4; ++t)
                        CHECK(o.state[size_t(in.conv_at(slot, 2 + t, ch))].bits == proj[size_t((r * 4 + t) * c.N + ch)].bits);
                }
            }
            // every other slot (including the later tokens' slots) is untouched
            for (int slot = 0; slot < c.slots; ++slot) {
                if (written[size_t(slot)]) continue;
                for (int j = 0; j < c.conv_len(); ++j)
                    for (int ch = 0; ch < c.C; ++ch)
                        CHECK(o.state[size_t(in.conv_at(slot, j, ch))].bits == in.conv_state[size_t(in.conv_at(slot, j, ch))].bits);
            }
        }
    }
}

TEST_CASE("a request without a running slot convolves zeros and writes nothing") {
    StepInputs in = conv_step(ConvLayout::sd);
    const Config& c = in.cfg;
    set_taps(in, {1, 1, 1, 0});  // the state taps only for token 0
    in.state_indices[0] = -1;     // request 0: no running slot (later tokens keep theirs)
    in.state_indices[4] = 0;      // request 1: "none" spelled 0
    in.num_accepted = {2, 3};
    std::vector<bf16> proj = conv_inputs(c);
    ConvOut o = conv(in, proj);
    for (int r = 0; r < 2; ++r)
        for (int ch = 0; ch < c.C; ++ch) CHECK(o.qkv[size_t((r * 4) * c.C + ch)].bits == 0);  // SiLU(0) = +0
    CHECK(same_bits(o.state, in.conv_state));
}

TEST_CASE("the sd and ds layouts give the same qkv and the same (transposed) state") {
    Rng rng(11);
    StepInputs sd = conv_step(ConvLayout::sd), ds = conv_step(ConvLayout::ds);
    const Config& c = sd.cfg;
    for (int slot = 0; slot < c.slots; ++slot)
        for (int j = 0; j < c.conv_len(); ++j)
            for (int ch = 0; ch < c.C; ++ch)
                sd.conv_state[size_t(sd.conv_at(slot, j, ch))] = ds.conv_state[size_t(ds.conv_at(slot, j, ch))] =
                    B(float(rng.normal()));
    for (size_t i = 0; i < sd.conv_w.size(); ++i) sd.conv_w[i] = ds.conv_w[i] = float(rng.normal());
    sd.num_accepted = ds.num_accepted = {3, 2};
    std::vector<bf16> proj = conv_inputs(c);
    ConvOut a = conv(sd, proj), b = conv(ds, proj);
    CHECK(same_bits(a.qkv, b.qkv));
    for (int slot = 0; slot < c.slots; ++slot)
        for (int j = 0; j < c.conv_len(); ++j)
            for (int ch = 0; ch < c.C; ++ch)
                CHECK(a.state[size_t(sd.conv_at(slot, j, ch))].bits == b.state[size_t(ds.conv_at(slot, j, ch))].bits);
}
}
