// verify::verify_step on candidates with one planted bug each, one for every SPEC §5 category:
// the right check fails, naming the right element, and the checks that cannot see the bug pass.
// And on correct candidates (the reference in every order it offers): every check passes.
#include <algorithm>
#include <cmath>

#include "properties/planted_bugs.hpp"
#include "tests/verify/verify_util.hpp"

using namespace monokda;
using namespace monokda::verify;
using namespace monokda::verify::test;

namespace {

StepOutputs<float> reference_out() { return measured().ref; }
const StepInputs& step() { return measured().in; }
const Config& cfg() { return measured().in.cfg; }

// a live request that has an initial state, and one of its slots
int live_request() {
    for (int r = 0; r < cfg().R; ++r)
        if (step().idx(r, step().num_accepted[size_t(r)] - 1) > 0 && step().idx(r, 0) > 0) return r;
    FAIL("no live request");
    return -1;
}

// the k-th slot (k = 0, 1, ...) that no state index names, slot 0 excluded
int untouched_slot(int k) {
    for (int s = 1; s < cfg().slots; ++s) {
        bool used = false;
        for (int32_t i : step().state_indices) used = used || i == s;
        if (!used && k-- == 0) return s;
    }
    FAIL("not enough untouched slots");
    return -1;
}

// checks expected to fail, exactly
void expect_failed(const std::vector<Check>& checks, const std::string& names) {
    INFO(all_lines(checks));
    CHECK(failed_names(checks) == names);
}

}  // namespace

TEST_SUITE("verify") {

TEST_CASE("the reference passes every check, in every order it offers") {
    const StepInputs& in = step();
    for (const char* order : {"sequential", "pairwise", "split:3", "split:16", "shuffle:7",
                              "attn_sumsq=split:16,attn_dot=split:16,x_sumsq=split:16,in_proj=split:16,f_b=pairwise,"
                              "l2_q=pairwise,l2_k=pairwise,rec_kS=pairwise,rec_oq=pairwise,onorm_sumsq=split:4"}) {
        CAPTURE(order);
        const std::vector<Check> checks = verdicts(Candidate::all(ref::run<float>(in, ReductionOrder::parse(order))));
        INFO(all_lines(checks));
        CHECK(all_passed(checks));
        REQUIRE(checks.size() == check_names().size());
        for (size_t i = 0; i < checks.size(); ++i) {
            CHECK(checks[i].name == check_names()[i]);
            CHECK(checks[i].status == Status::passed);  // this step has something for every check
        }
    }
}

TEST_CASE("a candidate that exports no hand-offs: its stages are not checked, never passed") {
    Candidate c = Candidate::all(reference_out());
    for (const char* n : {"x", "proj", "g1", "qkv", "o"}) c.present.erase(n);
    const std::vector<Check> checks = verdicts(c);
    CHECK(all_passed(checks));
    for (const char* n : {"own_proj.conv_state", "stage.x", "stage.proj", "stage.g1", "stage.qkv", "stage.o",
                          "stage.ssm_state", "stage.core_out", "envelope.x", "envelope.proj", "envelope.g1",
                          "envelope.qkv", "envelope.o"}) {
        CAPTURE(n);
        CHECK(find(checks, n).status == Status::not_checked);
        CHECK(find(checks, n).summary.find("not exported") != std::string::npos);
    }
    CHECK(find(checks, "stage.core_out").summary == "needs o, proj (not exported)");
    CHECK(find(checks, "envelope.core_out").status == Status::passed);
    CHECK(find(checks, "exact.null_requests").status == Status::passed);  // core_out alone
}

TEST_CASE("planted: a null request's o left stale (exact.null_requests)") {
    StepOutputs<float> o = reference_out();
    const int E = cfg().E();
    // request 0 has no state: its o rows keep what the buffer held (request 3's), core_out follows
    for (int t = 0; t < cfg().L; ++t)
        for (int e = 0; e < E; ++e) o.o[size_t(t) * E + e] = o.o[size_t(3 * cfg().L + t) * E + e];
    o.core_out = ref::out_norm<float>(step(), {}, o.o, o.proj);
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    // E gives request 0 zeros (stage.o), and the oracle too (envelope); core_out agrees with the stale o
    expect_failed(checks, "exact.null_requests,stage.o,envelope.o,envelope.core_out");
    CHECK(find(checks, "stage.core_out").status == Status::passed);
    const Check& k = find(checks, "exact.null_requests");
    REQUIRE(k.has_first);
    CHECK(k.first.tensor == "o");
    CHECK(at(k.first, "request") == 0);
    CHECK(at(k.first, "token") == 0);
    CHECK(k.first.expected_bits == "0x0000");
    CHECK(k.differing > 1);
}

TEST_CASE("planted: an untouched ssm slot zeroed (exact.ssm_state.untouched)") {
    StepOutputs<float> o = reference_out();
    const int s = untouched_slot(0);
    const size_t per = size_t(cfg().H) * cfg().V * cfg().K;
    std::fill_n(&o.ssm_state[size_t(s) * per], per, 0.0f);
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "exact.ssm_state.untouched,envelope.ssm_state");
    const Check& k = find(checks, "exact.ssm_state.untouched");
    CHECK(at(k.first, "slot") == s);
    CHECK(at(k.first, "head") == 0);
    CHECK(k.differing == int64_t(per));
}

TEST_CASE("planted: ssm_state written [slots, H, K, V] and read as SPEC's (exact.ssm_state.untouched first)") {
    StepOutputs<float> o = reference_out();
    const Config& c = cfg();
    std::vector<float> t(o.ssm_state.size());
    const size_t head = size_t(c.V) * c.K;
    for (size_t sh = 0; sh < size_t(c.slots) * c.H; ++sh)
        for (int v = 0; v < c.V; ++v)
            for (int k = 0; k < c.K; ++k) t[sh * head + size_t(k) * c.V + v] = o.ssm_state[sh * head + size_t(v) * c.K + k];
    o.ssm_state = t;
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "exact.ssm_state.untouched,stage.ssm_state,envelope.ssm_state");
    const Check& k = find(checks, "exact.ssm_state.untouched");
    CHECK(at(k.first, "slot") == 0);  // slot 0 is never live
    CHECK(at(k.first, "v") == 0);
    CHECK(at(k.first, "k") == 1);  // (0, 0) stays on the diagonal
}

TEST_CASE("planted: the conv output rounded twice, everything after recomputed from it (stage.qkv)") {
    // bf16 of the conv accumulator before SiLU: self-consistent, within an ulp, far from 99.9 %
    const StepOutputs<float> o = props::planted_target("conv-acc-rounded").run(step());
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    const Check& k = find(checks, "stage.qkv");
    INFO(all_lines(checks));
    CHECK(k.status == Status::failed);
    REQUIRE(!k.numbers.empty());
    CHECK(k.numbers.front().second < 0.95);  // frac_identical: far below the floor, not a borderline
    CHECK(find(checks, "stage.o").status == Status::passed);  // later stages are consistent with it
    CHECK(find(checks, "stage.core_out").status == Status::passed);
    CHECK(find(checks, "stage.ssm_state").status == Status::passed);
    CHECK(k.first.tensor == "qkv");
    CHECK(failed_names(checks).find("stage.qkv") == 0);
}

TEST_CASE("planted: g1 truncated to bf16 instead of rounded, everything after recomputed (stage.g1)") {
    StepOutputs<float> o = reference_out();
    const StepInputs& in = step();
    const Config& c = cfg();
    for (int s = 0; s < c.S(); ++s)
        for (int e = 0; e < c.E(); ++e) {
            float acc = o.proj[size_t(s) * c.N + c.col_fa()].to_float() * in.f_b_w[size_t(e) * c.F].to_float();
            for (int f = 1; f < c.F; ++f)
                acc = acc + o.proj[size_t(s) * c.N + c.col_fa() + f].to_float() * in.f_b_w[size_t(e) * c.F + f].to_float();
            o.g1[size_t(s) * c.E() + e] = bf16::from_bits(uint16_t(f32_bits(acc) >> 16));  // the rounding missing
        }
    ref::recurrence<float>(in, {}, o.qkv, o.proj, o.g1, o.o, o.ssm_state);
    o.core_out = ref::out_norm<float>(in, {}, o.o, o.proj);
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    INFO(all_lines(checks));
    const Check& k = find(checks, "stage.g1");
    CHECK(k.status == Status::failed);
    CHECK(find(checks, "stage.o").status == Status::passed);
    CHECK(failed_names(checks).find("stage.g1") == 0);
    CHECK(k.first.tensor == "g1");
}

TEST_CASE("planted: a kept conv entry from offset a-1 instead of a (exact.conv_state.kept)") {
    StepOutputs<float> o = reference_out();
    const StepInputs& in = step();
    const int r = live_request(), slot = in.idx(r, 0), a = in.num_accepted[size_t(r)];
    for (int ch = 0; ch < cfg().C; ++ch)
        o.conv_state[size_t(in.conv_at(slot, 0, ch))] = in.conv_state[size_t(in.conv_at(slot, a - 1, ch))];
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "exact.conv_state.kept");
    const Check& k = find(checks, "exact.conv_state.kept");
    CHECK(at(k.first, "slot") == slot);
    CHECK(at(k.first, "entry") == 0);
    CHECK(at(k.first, "channel") == 0);
}

TEST_CASE("planted: the new conv entries hold the conv output, not the candidate's own proj (own_proj.conv_state)") {
    StepOutputs<float> o = reference_out();
    const StepInputs& in = step();
    const Config& c = cfg();
    const int r = live_request(), slot = in.idx(r, 0);
    for (int t = 0; t < c.L; ++t)
        for (int ch = 0; ch < c.C; ++ch)
            o.conv_state[size_t(in.conv_at(slot, c.W - 2 + t, ch))] = o.qkv[size_t(r * c.L + t) * c.C + ch];
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "own_proj.conv_state");
    const Check& k = find(checks, "own_proj.conv_state");
    CHECK(at(k.first, "slot") == slot);
    CHECK(at(k.first, "entry") == c.W - 2);
    CHECK(k.first.part == "q");
}

TEST_CASE("planted: the block row not written on a block-write layer (exact.blocks)") {
    StepOutputs<float> o = reference_out();
    o.blocks = step().blocks;  // the bank as input: row nb never got P'
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "exact.blocks");
    const Check& k = find(checks, "exact.blocks");
    CHECK(at(k.first, "bank_row") == cfg().nb);
    CHECK(at(k.first, "request") == 0);
    CHECK(at(k.first, "token") == 0);
}

TEST_CASE("planted: a tensor-core-like in_proj, 99.7 % identical: fails stage.proj unless --in-proj tensor-cores") {
    // a step big enough that 0.3 % is a rate: S = 128, 36864 proj elements (99.9 % allows 59, 99.5 % 240)
    Config c = Config::preset("small");
    c.R = 16, c.L = 8, c.nb = 3, c.seed = 5;
    const StepInputs in = make_fixture(c);
    const StepOutputs<float> o = props::planted_target("in-proj-tensor-core-like").run(in);
    const MeasuredEnvelope m = measure_envelope(in);
    auto run = [&](InProj p) {
        Options opt;
        opt.in_proj = p;
        const emu::Envelope env = widen_for(m.envelope, p, in, m.oracle);
        return verify_step(in, Candidate::all(o), opt, &env, &m.oracle);
    };
    const std::vector<Check> exact = run(InProj::exact);
    INFO(all_lines(exact));
    CHECK(failed_names(exact).find("stage.proj") == 0);
    const Check& k = find(exact, "stage.proj");
    REQUIRE(!k.numbers.empty());
    CHECK(k.numbers.front().second > 0.995);
    CHECK(k.numbers.front().second < 0.999);
    CHECK(k.first.tensor == "proj");
    const std::vector<Check> tc = run(InProj::tensor_cores);
    INFO(all_lines(tc));
    CHECK(all_passed(tc));
}

TEST_CASE("planted: a state written to slot 0 for a later token without a slot (exact.ssm_state.untouched)") {
    StepOutputs<float> o = reference_out();
    const StepInputs& in = step();
    const Config& c = cfg();
    REQUIRE(in.idx(1, 1) <= 0);  // request 1's token 1 has no slot
    // the kernel stores token 1's state to slot max(idx, 0) = 0: the state after token 1, which a
    // recurrence writing token 1 to a spare slot gives
    StepInputs w = in;
    const int spare = untouched_slot(0);
    w.state_indices[size_t(1 * c.L + 1)] = spare;
    std::vector<bf16> oo;
    std::vector<float> st;
    ref::recurrence<float>(w, {}, o.qkv, o.proj, o.g1, oo, st);
    const size_t per = size_t(c.H) * c.V * c.K;
    std::copy_n(&st[size_t(spare) * per], per, &o.ssm_state[0]);
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "exact.ssm_state.untouched,envelope.ssm_state");
    const Check& k = find(checks, "exact.ssm_state.untouched");
    CHECK(at(k.first, "slot") == 0);
}

TEST_CASE("planted: core_out off by 3 %, no hand-offs exported (envelope.core_out)") {
    StepOutputs<float> o = reference_out();
    for (bf16& y : o.core_out) y = bf16::round(y.to_float() * 1.03f);
    Candidate c = Candidate::all(o);
    for (const char* n : {"x", "proj", "g1", "qkv", "o"}) c.present.erase(n);
    const std::vector<Check> checks = verdicts(c);
    expect_failed(checks, "envelope.core_out");  // the null request's zeros stay zeros
    const Check& k = find(checks, "envelope.core_out");
    CHECK(k.first.tensor == "core_out");
    CHECK(at(k.first, "request") == 1);  // request 0 is null: its core_out is ±0, unmoved
    CHECK(find(checks, "stage.core_out").status == Status::not_checked);
}

TEST_CASE("planted: one prefix_out element one ulp off (exact.prefix_out), one o element two ulps off (stage.o)") {
    {
        StepOutputs<float> o = reference_out();
        const size_t i = size_t(2 * cfg().D + 5);
        o.prefix_out[i].bits ^= 1;  // blocks keeps the right P': only the prefix_out store is wrong
        const std::vector<Check> checks = verdicts(Candidate::all(o));
        expect_failed(checks, "exact.prefix_out");  // x is computed from the fixture's prefix
        const Check& k = find(checks, "exact.prefix_out");
        CHECK(at(k.first, "request") == 0);
        CHECK(at(k.first, "token") == 2);
        CHECK(at(k.first, "column") == 5);
        CHECK(k.differing == 1);
    }
    {
        StepOutputs<float> o = reference_out();
        const int r = live_request();
        const size_t row = size_t(r * cfg().L + 1) * cfg().E();
        // the row's largest element: 2 ulps there is 2 ulps at row scale
        size_t big = row;
        for (size_t i = row; i < row + size_t(cfg().E()); ++i)
            if (std::fabs(o.o[i].to_float()) > std::fabs(o.o[big].to_float())) big = i;
        o.o[big].bits = uint16_t(o.o[big].bits + 2);
        const std::vector<Check> checks = verdicts(Candidate::all(o));
        INFO(all_lines(checks));
        const Check& k = find(checks, "stage.o");
        CHECK(k.status == Status::failed);
        CHECK(at(k.first, "request") == r);
        CHECK(at(k.first, "token") == 1);
        CHECK(at(k.first, "column") == int64_t(big - row));
        CHECK(at(k.first, "head") == int64_t(big - row) / cfg().V);
    }
}

TEST_CASE("planted: an untouched conv slot overwritten (exact.conv_state.untouched)") {
    StepOutputs<float> o = reference_out();
    const StepInputs& in = step();
    const int s = untouched_slot(1);
    o.conv_state[size_t(in.conv_at(s, 1, 7))].bits ^= 0x10;
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "exact.conv_state.untouched");
    const Check& k = find(checks, "exact.conv_state.untouched");
    CHECK(at(k.first, "slot") == s);
    CHECK(at(k.first, "entry") == 1);
    CHECK(at(k.first, "channel") == 7);
    CHECK(k.differing == 1);
}
}
