// Shared set-up of the emulator tests: the small preset, prepared once per test binary.
#pragma once
#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.hpp"

#include "tests/core/plan_util.hpp"  // move_kda_task

#include "emulator/emulate.hpp"
#include "emulator/replay_token.hpp"
#include "reference/reference.hpp"

namespace monokda::emu::test {

inline EmulateOptions small_options() {
    EmulateOptions o;
    o.fixture.preset = "small";
    o.envelope_orders = -1;  // tests that need the envelope ask for it
    return o;
}

// Fixture, plan and references for four steps (built on first use).
inline Prepared& small_prepared() {
    static Prepared p = prepare(small_options(), 4);
    return p;
}

using monokda::same_bits;
using monokda::test::move_kda_task;

// Every output and intermediate, bit for bit; returns the first that differs ("" if none).
inline std::string first_different(const StepOutputs<float>& a, const StepOutputs<float>& b) {
    if (!same_bits(a.prefix_out, b.prefix_out)) return "prefix_out";
    if (!same_bits(a.blocks, b.blocks)) return "blocks";
    if (!same_bits(a.x, b.x)) return "x";
    if (!same_bits(a.proj, b.proj)) return "proj";
    if (!same_bits(a.g1, b.g1)) return "g1";
    if (!same_bits(a.qkv, b.qkv)) return "qkv";
    if (!same_bits(a.conv_state, b.conv_state)) return "conv_state";
    if (!same_bits(a.o, b.o)) return "o";
    if (!same_bits(a.ssm_state, b.ssm_state)) return "ssm_state";
    if (!same_bits(a.core_out, b.core_out)) return "core_out";
    return "";
}

inline bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

}  // namespace monokda::emu::test
