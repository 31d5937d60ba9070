// verify::verify_step on candidates with one planted bug each, covering every SPEC §5 category
// (the exact set, the own-proj conv entries, the teacher-forced stages, the envelope): the right
// check fails, naming the right element (located here from the planted data, not by verify), and
// the checks that cannot see the bug pass. And on correct candidates (the reference in every order
// it offers): every check passes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

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

// the first index at which a and b differ in their bits (-1: nowhere)
template <class T>
int64_t first_differing(const std::vector<T>& a, const std::vector<T>& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return int64_t(i);
    return -1;
}

std::string hex(bf16 b) {
    char s[8];
    std::snprintf(s, sizeof s, "0x%04x", unsigned(b.bits));
    return s;
}

// `e` is element i of a [S, width] row tensor: its request, token and column; head = column / head_width
void expect_row_element(const Element& e, const std::string& tensor, int64_t i, int width, int head_width) {
    CAPTURE(e.str());
    REQUIRE(i >= 0);
    CHECK(e.tensor == tensor);
    CHECK(e.index == i);
    CHECK(at(e, "request") == (i / width) / cfg().L);
    CHECK(at(e, "token") == (i / width) % cfg().L);
    CHECK(at(e, "column") == i % width);
    if (head_width > 0) CHECK(at(e, "head") == (i % width) / head_width);
}

// the failed check `name`, which has a first element
const Check& failed(const std::vector<Check>& checks, const std::string& name) {
    const Check& k = find(checks, name);
    INFO(all_lines(checks));
    CHECK(k.status == Status::failed);
    REQUIRE(k.has_first);
    return k;
}

// every later stage recomputed from a candidate's x, as a self-consistent implementation gives them
void downstream_of_x(StepOutputs<float>& o) {
    const StepInputs& in = step();
    o.proj = ref::in_proj<float>(in, {}, o.x);
    o.g1 = ref::f_b<float>(in, {}, o.proj);
    ref::short_conv<float>(in, o.proj, o.qkv, o.conv_state);
    ref::recurrence<float>(in, {}, o.qkv, o.proj, o.g1, o.o, o.ssm_state);
    o.core_out = ref::out_norm<float>(in, {}, o.o, o.proj);
}

Candidate without_handoffs(const StepOutputs<float>& o) {
    Candidate c = Candidate::all(o);
    for (const char* n : {"x", "proj", "g1", "qkv", "o"}) c.present.erase(n);
    return c;
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
    const std::vector<Check> checks = verdicts(without_handoffs(reference_out()));
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

// ---- exact: prefix_out, the bank, the conv entries kept and untouched, untouched ssm slots, null requests

TEST_CASE("planted: one prefix_out element one ulp off (exact.prefix_out)") {
    StepOutputs<float> o = reference_out();
    const size_t i = size_t(2 * cfg().D + 5);
    o.prefix_out[i].bits ^= 1;  // blocks keeps the right P': only the prefix_out store is wrong
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "exact.prefix_out");  // x is computed from the fixture's prefix
    const Check& k = failed(checks, "exact.prefix_out");
    expect_row_element(k.first, "prefix_out", int64_t(i), cfg().D, 0);
    CHECK(at(k.first, "token") == 2);
    CHECK(k.differing == 1);
}

TEST_CASE("planted: the block row not written on a block-write layer (exact.blocks)") {
    StepOutputs<float> o = reference_out();
    o.blocks = step().blocks;  // the bank as input: row nb never got P'
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "exact.blocks");
    const Check& k = failed(checks, "exact.blocks");
    const int64_t i = first_differing(o.blocks, reference_out().blocks);
    const int64_t D = cfg().D;
    CHECK(k.first.index == i);
    CHECK(at(k.first, "bank_row") == cfg().nb);
    CHECK(at(k.first, "request") == 0);
    CHECK(at(k.first, "token") == 0);
    CHECK(at(k.first, "column") == i % D);
    CHECK(k.first.expected_bits == hex(reference_out().prefix_out[size_t(i % D)]));
}

TEST_CASE("planted: a kept conv entry from offset a-1 instead of a (exact.conv_state.kept)") {
    StepOutputs<float> o = reference_out();
    const StepInputs& in = step();
    const int r = live_request(), slot = in.idx(r, 0), a = in.num_accepted[size_t(r)];
    for (int ch = 0; ch < cfg().C; ++ch)
        o.conv_state[size_t(in.conv_at(slot, 0, ch))] = in.conv_state[size_t(in.conv_at(slot, a - 1, ch))];
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "exact.conv_state.kept");
    const Check& k = failed(checks, "exact.conv_state.kept");
    // the first channel whose entries a-1 and a differ
    int ch = 0;
    while (in.conv_state[size_t(in.conv_at(slot, a - 1, ch))].bits == in.conv_state[size_t(in.conv_at(slot, a, ch))].bits) ++ch;
    CHECK(at(k.first, "slot") == slot);
    CHECK(at(k.first, "entry") == 0);
    CHECK(at(k.first, "channel") == ch);
}

TEST_CASE("planted: an untouched conv slot overwritten (exact.conv_state.untouched)") {
    StepOutputs<float> o = reference_out();
    const StepInputs& in = step();
    const int s = untouched_slot(1);
    o.conv_state[size_t(in.conv_at(s, 1, 7))].bits ^= 0x10;
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "exact.conv_state.untouched");
    const Check& k = failed(checks, "exact.conv_state.untouched");
    CHECK(at(k.first, "slot") == s);
    CHECK(at(k.first, "entry") == 1);
    CHECK(at(k.first, "channel") == 7);
    CHECK(k.first.part == "q");
    CHECK(k.differing == 1);
}

TEST_CASE("planted: an untouched ssm slot zeroed (exact.ssm_state.untouched)") {
    StepOutputs<float> o = reference_out();
    const int s = untouched_slot(0);
    const size_t per = size_t(cfg().H) * cfg().V * cfg().K;
    std::fill_n(&o.ssm_state[size_t(s) * per], per, 0.0f);
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "exact.ssm_state.untouched,envelope.ssm_state");
    const Check& k = failed(checks, "exact.ssm_state.untouched");
    const int64_t i = first_differing(o.ssm_state, step().ssm_state);  // the slot's first nonzero element
    REQUIRE(i >= int64_t(s * per));
    CHECK(k.first.index == i);
    CHECK(at(k.first, "slot") == s);
    CHECK(at(k.first, "head") == 0);
    CHECK(at(k.first, "v") == (i % int64_t(per)) / cfg().K);
    CHECK(at(k.first, "k") == i % cfg().K);
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
    const Check& k = failed(checks, "exact.ssm_state.untouched");
    CHECK(at(k.first, "slot") == 0);  // slot 0 is never live
    CHECK(at(k.first, "v") == 0);
    CHECK(at(k.first, "k") == 1);  // (0, 0) stays on the diagonal
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
    const Check& k = failed(checks, "exact.ssm_state.untouched");
    const int64_t i = first_differing(o.ssm_state, in.ssm_state);
    CHECK(k.first.index == i);
    CHECK(at(k.first, "slot") == 0);
    CHECK(at(k.first, "head") == i / int64_t(c.V * c.K));
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
    const Check& k = failed(checks, "exact.null_requests");
    int64_t i = 0;  // request 0's first element that is not +0
    while (o.o[size_t(i)].bits == 0) ++i;
    expect_row_element(k.first, "o", i, E, cfg().V);
    CHECK(at(k.first, "request") == 0);
    CHECK(k.first.expected_bits == "0x0000");
    CHECK(k.differing > 1);
}

TEST_CASE("planted: a null request's core_out left stale, its o right (exact.null_requests)") {
    // a kernel that skips step F for a request without a state: core_out keeps what the buffer held
    StepOutputs<float> o = reference_out();
    const int E = cfg().E(), L = cfg().L;
    for (int t = 0; t < L; ++t)  // request 0 is null; the buffer held request 3's rows
        for (int e = 0; e < E; ++e) o.core_out[size_t(t) * E + e] = o.core_out[size_t(3 * L + t) * E + e];
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "exact.null_requests,stage.core_out,envelope.core_out");
    CHECK(find(checks, "stage.o").status == Status::passed);
    const Check& k = failed(checks, "exact.null_requests");
    // F on o = +0 gives ±0 (the gain's sign): the first element that is neither
    int64_t i = 0;
    while ((o.core_out[size_t(i)].bits & 0x7fff) == 0) ++i;
    expect_row_element(k.first, "core_out", i, E, cfg().V);
    CHECK(at(k.first, "request") == 0);
    CHECK(k.first.expected_bits == hex(bf16::from_bits(step().o_norm_w[size_t(i % cfg().V)].bits & 0x8000)));
}

// ---- own proj: the new conv entries

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
    const Check& k = failed(checks, "own_proj.conv_state");
    int ch = 0;  // token 0's first channel where conv output and proj differ
    while (o.qkv[size_t(r * c.L) * c.C + ch].bits == o.proj[size_t(r * c.L) * c.N + ch].bits) ++ch;
    CHECK(at(k.first, "slot") == slot);
    CHECK(at(k.first, "entry") == c.W - 2);
    CHECK(at(k.first, "channel") == ch);
    CHECK(k.first.part == "q");
}

// ---- stage by stage (teacher forcing)

TEST_CASE("planted: x rounded before the input norm's gain, everything after recomputed from it (stage.x)") {
    // bf16(bf16(mixed · r) · w) instead of one rounding (#2): self-consistent, within an ulp
    StepOutputs<float> o = reference_out();
    const StepInputs& in = step();
    StepInputs unit = in;  // a gain of 1: step A gives bf16(mixed · r)
    std::fill(unit.input_norm_w.begin(), unit.input_norm_w.end(), bf16::round(1.0f));
    std::vector<bf16> po, bl, xr;
    ref::attnres<float>(unit, {}, po, bl, xr);
    for (size_t i = 0; i < xr.size(); ++i) o.x[i] = bf16::round(xr[i].to_float() * in.input_norm_w[i % size_t(cfg().D)].to_float());
    downstream_of_x(o);
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    INFO(all_lines(checks));
    CHECK(failed_names(checks).find("stage.x") == 0);
    for (const char* n : {"stage.proj", "stage.g1", "stage.qkv", "stage.o", "stage.ssm_state", "stage.core_out"})
        CHECK_MESSAGE(find(checks, n).status == Status::passed, n);  // later stages are consistent with x
    const Check& k = failed(checks, "stage.x");
    REQUIRE(!k.numbers.empty());
    CHECK(k.numbers.front().second < 0.95);  // frac_identical
    expect_row_element(k.first, "x", first_differing(o.x, reference_out().x), cfg().D, 0);
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
    const Check& k = failed(exact, "stage.proj");
    REQUIRE(!k.numbers.empty());
    CHECK(k.numbers.front().second > 0.995);
    CHECK(k.numbers.front().second < 0.999);
    // the first element whose rounding the GEMM flipped (x is the reference's: B fed it is the reference's proj)
    const std::vector<bf16> want = ref::in_proj<float>(in, {}, o.x);
    const int64_t i = first_differing(o.proj, want);
    REQUIRE(i >= 0);
    CHECK(k.first.index == i);
    CHECK(at(k.first, "request") == (i / c.N) / c.L);
    CHECK(at(k.first, "token") == (i / c.N) % c.L);
    CHECK(at(k.first, "column") == i % c.N);
    const std::vector<Check> tc = run(InProj::tensor_cores);
    INFO(all_lines(tc));
    CHECK(all_passed(tc));
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
    CHECK(find(checks, "stage.o").status == Status::passed);
    CHECK(failed_names(checks).find("stage.g1") == 0);
    const Check& k = failed(checks, "stage.g1");
    expect_row_element(k.first, "g1", first_differing(o.g1, reference_out().g1), c.E(), c.K);
}

TEST_CASE("planted: the conv output rounded twice, everything after recomputed from it (stage.qkv)") {
    // bf16 of the conv accumulator before SiLU: self-consistent, within an ulp, far from 99.9 %
    const StepOutputs<float> o = props::planted_target("conv-acc-rounded").run(step());
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    INFO(all_lines(checks));
    CHECK(find(checks, "stage.o").status == Status::passed);  // later stages are consistent with it
    CHECK(find(checks, "stage.core_out").status == Status::passed);
    CHECK(find(checks, "stage.ssm_state").status == Status::passed);
    CHECK(failed_names(checks).find("stage.qkv") == 0);
    const Check& k = failed(checks, "stage.qkv");
    REQUIRE(!k.numbers.empty());
    CHECK(k.numbers.front().second < 0.95);  // frac_identical: far below the floor, not a borderline
    // proj is the reference's, so D fed it is the reference's qkv
    REQUIRE(same_bits(o.proj, reference_out().proj));
    const int64_t i = first_differing(o.qkv, reference_out().qkv);
    expect_row_element(k.first, "qkv", i, cfg().C, 0);
    CHECK(k.first.part == std::string(1, "qkv"[(i % cfg().C) / cfg().E()]));
    CHECK(at(k.first, "head") == (i % cfg().C % cfg().E()) / cfg().K);
}

TEST_CASE("planted: one o element two ulps off at row scale (stage.o)") {
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
    const Check& k = failed(checks, "stage.o");
    expect_row_element(k.first, "o", int64_t(big), cfg().E(), cfg().V);
    CHECK(at(k.first, "request") == r);
    CHECK(at(k.first, "token") == 1);
}

TEST_CASE("planted: each written state is the request's last one, not one a token (stage.ssm_state)") {
    StepOutputs<float> o = reference_out();
    const StepInputs& in = step();
    const Config& c = cfg();
    const size_t per = size_t(c.H) * c.V * c.K;
    // request 3 writes a state every token; the planted kernel stores the last one to every slot
    const int r = 3, last = in.idx(r, c.L - 1);
    REQUIRE(in.idx(r, 0) > 0);
    REQUIRE(last > 0);
    int lowest = c.slots;  // of the slots changed, the lowest (the check walks the slots in order)
    for (int t = 0; t + 1 < c.L; ++t) {
        const int s = in.idx(r, t);
        if (s <= 0) continue;
        std::copy_n(&o.ssm_state[size_t(last) * per], per, &o.ssm_state[size_t(s) * per]);
        lowest = std::min(lowest, s);
    }
    REQUIRE(lowest < c.slots);
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "stage.ssm_state,envelope.ssm_state");  // o and core_out are right
    const Check& k = failed(checks, "stage.ssm_state");
    const int64_t i = first_differing(o.ssm_state, reference_out().ssm_state);
    CHECK(k.first.index == i);
    CHECK(at(k.first, "slot") == lowest);
    CHECK(at(k.first, "head") == (i % int64_t(per)) / int64_t(c.V * c.K));
    CHECK(at(k.first, "v") == (i % int64_t(c.V * c.K)) / c.K);
    CHECK(at(k.first, "k") == i % c.K);
}

TEST_CASE("planted: the output gate reads the previous row's g2 (stage.core_out)") {
    StepOutputs<float> o = reference_out();
    const Config& c = cfg();
    std::vector<bf16> shifted = o.proj;  // row s's g2 columns from row s - 1 (row 0 keeps its own)
    for (int s = c.S() - 1; s > 0; --s)
        for (int e = 0; e < c.E(); ++e)
            shifted[size_t(s) * c.N + 3 * c.E() + e] = o.proj[size_t(s - 1) * c.N + 3 * c.E() + e];
    o.core_out = ref::out_norm<float>(step(), {}, o.o, shifted);
    const std::vector<Check> checks = verdicts(Candidate::all(o));
    expect_failed(checks, "stage.core_out,envelope.core_out");  // null rows are ±0 whatever the gate
    const Check& k = failed(checks, "stage.core_out");
    expect_row_element(k.first, "core_out", first_differing(o.core_out, reference_out().core_out), c.E(), c.V);
}

// ---- free-running: the envelope

TEST_CASE("planted: core_out off by 3 %, no hand-offs exported (envelope.core_out)") {
    StepOutputs<float> o = reference_out();
    for (bf16& y : o.core_out) y = bf16::round(y.to_float() * 1.03f);
    const std::vector<Check> checks = verdicts(without_handoffs(o));
    expect_failed(checks, "envelope.core_out");  // the null request's zeros stay zeros
    CHECK(find(checks, "stage.core_out").status == Status::not_checked);
    const Check& k = failed(checks, "envelope.core_out");
    // the first element that is not the f64 oracle's
    const int64_t i = first_differing(o.core_out, measured().oracle.get("core_out").as<bf16>());
    expect_row_element(k.first, "core_out", i, cfg().E(), cfg().V);
    CHECK(at(k.first, "request") == 1);  // request 0 is null: its core_out is ±0, unmoved
}

TEST_CASE("planted: ssm_state stored through bf16, no hand-offs exported (envelope.ssm_state)") {
    StepOutputs<float> o = reference_out();
    const std::vector<float>& input = step().ssm_state;
    for (size_t i = 0; i < o.ssm_state.size(); ++i)
        if (f32_bits(o.ssm_state[i]) != f32_bits(input[i]))  // the written slots
            o.ssm_state[i] = bf16::round(o.ssm_state[i]).to_float();
    const std::vector<Check> checks = verdicts(without_handoffs(o));
    expect_failed(checks, "envelope.ssm_state");
    const Check& k = failed(checks, "envelope.ssm_state");
    const Tensor& want = measured().oracle.get("ssm_state");
    int64_t i = 0;  // the first element that is not the oracle's
    for (;; ++i) {
        REQUIRE(size_t(i) < o.ssm_state.size());
        const double w = want.dtype == DType::F64 ? want.as<double>()[size_t(i)] : double(want.as<float>()[size_t(i)]);
        if (double(o.ssm_state[size_t(i)]) != w) break;
    }
    const int64_t per = int64_t(cfg().H) * cfg().V * cfg().K;
    CHECK(k.first.index == i);
    CHECK(at(k.first, "slot") == i / per);
    CHECK(at(k.first, "head") == (i % per) / int64_t(cfg().V * cfg().K));
}
}
