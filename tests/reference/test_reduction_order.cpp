// The reduction-order policy: each order visits every term once, exact sums agree, parse errors are
// bad input, and each site of the reference is routed through its own entry.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "core/error.hpp"
#include "core/fixture_gen.hpp"
#include "reference/reference.hpp"
#include "tests/reference/tiny_step.hpp"

using namespace monokda;
using namespace monokda::test;

namespace {

const char* kOrders[] = {"sequential", "pairwise", "split:1", "split:3", "split:7", "split:1000",
                         "shuffle:0", "shuffle:42", "cluster:1", "cluster:8", "cluster:1000"};

}  // namespace

TEST_SUITE("reference") {

TEST_CASE("every order visits every term exactly once") {
    for (const char* o : kOrders) {
        ReductionOrder ord = ReductionOrder::parse(o);
        for (int n : {1, 2, 3, 7, 64, 129}) {
            CAPTURE(o);
            CAPTURE(n);
            std::vector<int> visits(size_t(n), 0);
            int total = ord.reduce<int>(Site::in_proj, n, [&](int i) { ++visits[size_t(i)]; return 1; });
            CHECK(total == n);
            for (int v : visits) CHECK(v == 1);
        }
    }
}

TEST_CASE("exactly representable integer terms give the same sum in every order") {
    for (const char* o : kOrders) {
        ReductionOrder ord = ReductionOrder::parse(o);
        CAPTURE(o);
        // sum of i*(-1)^i * 3 for i < 1000: small integers, every partial sum exact in f32
        float s = ord.reduce<float>(Site::mix, 1000, [](int i) { return float((i % 2 ? -3 : 3) * i); });
        CHECK(s == -1500.0f);
        double d = ord.reduce<double>(Site::x_sumsq, 17, [](int i) { return double(i * i); });
        CHECK(d == 1496.0);
    }
}

TEST_CASE("orders differ where rounding makes order matter") {
    // [2^24, 1, 1, -2^24]: sequential absorbs both ones (0), pairwise keeps them ((2^24+1) + (1-2^24) = 1)
    const float big = 16777216.0f;
    auto term = [&](int i) { return i == 0 ? big : i == 3 ? -big : 1.0f; };
    CHECK(ReductionOrder::parse("sequential").reduce<float>(Site::f_b, 4, term) == 0.0f);
    CHECK(ReductionOrder::parse("pairwise").reduce<float>(Site::f_b, 4, term) == 1.0f);
    CHECK(ReductionOrder::parse("split:2").reduce<float>(Site::f_b, 4, term) == 1.0f);
}

TEST_CASE("shuffle is a seeded permutation: same seed same order, other seeds other orders") {
    ReductionOrder a = ReductionOrder::parse("shuffle:7"), b = ReductionOrder::parse("shuffle:7"),
                   c = ReductionOrder::parse("shuffle:8");
    const std::vector<int>& pa = a.permutation(Site::in_proj, 7, 50);
    CHECK(pa == b.permutation(Site::in_proj, 7, 50));
    CHECK(pa != c.permutation(Site::in_proj, 8, 50));
    std::set<int> seen(pa.begin(), pa.end());
    CHECK(seen.size() == 50);
    CHECK(*seen.begin() == 0);
    CHECK(*seen.rbegin() == 49);
    std::vector<int> order;
    a.reduce<int>(Site::in_proj, 50, [&](int i) { order.push_back(i); return 0; });
    CHECK(order == pa);
}

TEST_CASE("the cluster order: 16-term k-steps, even and odd apart from +0, even + odd, parts in rank order") {
    // terms: 2^24 at 0 (k-step 0), 1 at 16 (k-step 1), -2^24 at 32 (k-step 2), zeros elsewhere; 2^24 + 1
    // rounds back to 2^24, so a 1 added while the 2^24 is in the sum is lost
    const float big = 16777216.0f;
    auto term = [&](int i) { return i == 0 ? big : i == 16 ? 1.0f : i == 32 ? -big : 0.0f; };
    // one part: even k-steps (0 + 2^24) + (-2^24) = 0, odd ones 0 + 1 = 1, even + odd = 1
    CHECK(ReductionOrder::parse("cluster:1").reduce<float>(Site::in_proj, 64, term) == 1.0f);
    // sequentially (term by term, or k-step by k-step) the 1 meets the 2^24 and is lost
    CHECK(ReductionOrder::parse("sequential").reduce<float>(Site::in_proj, 64, term) == 0.0f);
    // two parts of 32: part 0 = 2^24 + 1 = 2^24, part 1 = -2^24 + 0, added in rank order: 0
    CHECK(ReductionOrder::parse("cluster:2").reduce<float>(Site::in_proj, 64, term) == 0.0f);
    // every term visited once, in index order (k-step by k-step, parts in order)
    std::vector<int> order;
    ReductionOrder::parse("cluster:3").reduce<int>(Site::in_proj, 100, [&](int i) { order.push_back(i); return 0; });
    std::vector<int> want(100);
    for (int i = 0; i < 100; ++i) want[size_t(i)] = i;
    CHECK(order == want);
    // the accumulators start at +0 (as the warps' zeroed ones): an all-(-0) sum is +0, where split's is -0
    auto neg_zero = [](int) { return -0.0f; };
    CHECK(!std::signbit(ReductionOrder::parse("cluster:2").reduce<float>(Site::in_proj, 64, neg_zero)));
    CHECK(std::signbit(ReductionOrder::parse("split:2").reduce<float>(Site::in_proj, 64, neg_zero)));
    CHECK(ReductionOrder::parse("cluster:8").str() == "cluster:8");
    CHECK(ReductionOrder::parse("in_proj=cluster:8").at(Site::in_proj).kind == OrderSpec::cluster);
}

TEST_CASE("order strings that are not sequential|pairwise|split:P|cluster:P|shuffle:SEED are bad input") {
    for (const char* bad : {"", "seq", "split", "split:", "split:0", "split:-2", "split:x", "split:3x", "split:70000",
                            "shuffle:", "shuffle:-1", "shuffle:1.5", "pairwise:2", "SEQUENTIAL", "cluster", "cluster:0",
                            "cluster:x", "cluster:70000"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(ReductionOrder::parse(bad), BadInput);
    }
    try {
        ReductionOrder::parse("split:0");
    } catch (const BadInput& e) {
        CHECK(std::string(e.what()).find("split") != std::string::npos);
    }
    CHECK(ReductionOrder::parse("split:4").str() == "split:4");
    CHECK(ReductionOrder::parse("shuffle:9").str() == "shuffle:9");
}

TEST_CASE("in_proj and f_b sums go through their sites' orders") {
    Config c = tiny_config(4, 1, 1, 4, 1, 1, 1);  // F = 4
    StepInputs in = zero_inputs(c);
    const float big = 16777216.0f;
    for (int d = 0; d < 4; ++d) in.in_proj_w[size_t(d)] = B(1);
    for (int f = 0; f < 4; ++f) in.f_b_w[size_t(f)] = B(1);
    std::vector<bf16> x = {B(big), B(1), B(1), B(-big)};
    ReductionOrder seq, pw_in, pw_fb;
    pw_in.set(Site::in_proj, OrderSpec{OrderSpec::pairwise});
    pw_fb.set(Site::f_b, OrderSpec{OrderSpec::pairwise});
    CHECK(F(ref::in_proj<float>(in, seq, x)[0]) == 0.0f);
    CHECK(F(ref::in_proj<float>(in, pw_in, x)[0]) == 1.0f);
    CHECK(F(ref::in_proj<float>(in, pw_fb, x)[0]) == 0.0f);
    std::vector<bf16> proj(size_t(c.N), B(0));
    for (int f = 0; f < 4; ++f) proj[size_t(c.col_fa() + f)] = x[size_t(f)];
    CHECK(F(ref::f_b<float>(in, seq, proj)[0]) == 0.0f);
    CHECK(F(ref::f_b<float>(in, pw_fb, proj)[0]) == 1.0f);
    CHECK(F(ref::f_b<float>(in, pw_in, proj)[0]) == 0.0f);
}

TEST_CASE("a site's order changes nothing upstream of its stage") {
    Config c = Config::preset("small");
    c.R = 2; c.L = 3; c.nb = 4; c.seed = 3;
    StepInputs in = make_fixture(c);
    const StepOutputs<float> base = ref::run<float>(in);
    // first stage each site can change: 0 A (x), 1 B (proj, and qkv/conv_state made from it),
    // 2 C (g1), 4 E (o, ssm_state), 5 F (core_out)
    const int stage[kSiteCount] = {0, 0, 0, 0, 0, 1, 2, 4, 4, 4, 4, 5};
    for (int si = 0; si < kSiteCount; ++si) {
        CAPTURE(to_string(Site(si)));
        ReductionOrder ord;
        ord.set(Site(si), OrderSpec{OrderSpec::shuffle, 1, 5});
        const StepOutputs<float> out = ref::run<float>(in, ord);
        CHECK(same_bits(out.prefix_out, base.prefix_out));
        CHECK(same_bits(out.blocks, base.blocks));
        if (stage[si] > 0) CHECK(same_bits(out.x, base.x));
        if (stage[si] > 1) {
            CHECK(same_bits(out.proj, base.proj));
            CHECK(same_bits(out.qkv, base.qkv));
            CHECK(same_bits(out.conv_state, base.conv_state));
        }
        if (stage[si] > 2) CHECK(same_bits(out.g1, base.g1));
        if (stage[si] > 4) {
            CHECK(same_bits(out.o, base.o));
            CHECK(out.ssm_state == base.ssm_state);
        }
        // the recurrence's k-sum feeds the f32 state, so its order always shows there
        if (Site(si) == Site::rec_kS) CHECK(out.ssm_state != base.ssm_state);
    }
}
}
