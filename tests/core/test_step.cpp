// Step tensors: validation of a fixture file, and the generator's conventions.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <set>

#include "core/error.hpp"
#include "core/fixture_gen.hpp"
#include "core/step.hpp"
#include "tests/bad_input_message.hpp"

using namespace monokda;

namespace {

Config small(int R, int L, int nb, ConvLayout layout = ConvLayout::sd, uint64_t seed = 1) {
    Config c = Config::preset("small");
    c.R = R; c.L = L; c.nb = nb; c.conv_layout = layout; c.seed = seed;
    return c;
}

std::string load_error(const TensorFile& f) {
    return test::bad_input_message([&] { StepInputs::from_file(f); });
}

}  // namespace

TEST_SUITE("core") {

TEST_CASE("a fixture survives to_file / from_file unchanged, in both layouts") {
    for (ConvLayout layout : {ConvLayout::sd, ConvLayout::ds}) {
        StepInputs in = make_fixture(small(3, 2, 5, layout));
        TensorFile f = in.to_file();
        const int64_t expect_conv1 = layout == ConvLayout::sd ? in.cfg.conv_len() : in.cfg.C;
        REQUIRE(f.get("conv_state").shape.size() == 3);
        CHECK(f.get("conv_state").shape[1] == expect_conv1);
        StepInputs back = StepInputs::from_file(f);
        TensorFile g = back.to_file();
        CHECK(g.metadata == f.metadata);
        for (const auto& entry : f.tensors) {
            const std::string& name = entry.first;
            const auto& t = entry.second;
            CAPTURE(name);
            CHECK(g.get(name).bytes == t.bytes);
        }
    }
}

TEST_CASE("with_conv_layout moves every conv_state entry and nothing else") {
    const StepInputs sd = make_fixture(small(3, 4, 5, ConvLayout::sd));
    const StepInputs ds = sd.with_conv_layout(ConvLayout::ds);
    CHECK(ds.cfg.conv_layout == ConvLayout::ds);
    CHECK(!same_bits(ds.conv_state, sd.conv_state));  // the entries did move
    for (int s = 0; s < sd.cfg.slots; ++s)
        for (int j = 0; j < sd.cfg.conv_len(); ++j)
            for (int ch = 0; ch < sd.cfg.C; ++ch)
                REQUIRE(ds.conv_state[size_t(ds.conv_at(s, j, ch))].bits == sd.conv_state[size_t(sd.conv_at(s, j, ch))].bits);
    CHECK(ds.with_conv_layout(ConvLayout::sd) == sd);
}

TEST_CASE("every fixture tensor is checked for presence, dtype and shape") {
    const TensorFile good = make_fixture(small(2, 3, 2)).to_file();
    for (const auto& entry : good.tensors) {
        const std::string& name = entry.first;
        CAPTURE(name);
        TensorFile f = good;
        f.tensors.erase(name);
        CHECK(load_error(f).find("missing tensor '" + name + "'") != std::string::npos);

        f = good;  // same byte count, other dtype
        Tensor& u = f.tensors[name];
        if (u.dtype == DType::BF16) {
            u.dtype = DType::F32;
            u.shape.back() /= 2;
            if (u.shape.back() == 0) continue;
        } else {
            u.dtype = u.dtype == DType::I32 ? DType::F32 : DType::I32;
        }
        CHECK(load_error(f).find("tensor '" + name + "' has dtype") != std::string::npos);

        f = good;
        f.tensors[name].shape.insert(f.tensors[name].shape.begin(), 1);  // same bytes, one more dim
        CHECK(load_error(f).find("tensor '" + name + "' has shape") != std::string::npos);
    }
    TensorFile f = good;
    f.metadata.erase("nb");
    CHECK(load_error(f).find("missing key 'nb'") != std::string::npos);
}

TEST_CASE("state_indices and num_accepted are validated") {
    const TensorFile good = make_fixture(small(2, 3, 2)).to_file();
    auto with = [&](std::vector<int32_t> idx, std::vector<int32_t> acc) {
        TensorFile f = good;
        f.tensors["state_indices"] = Tensor::of(DType::I32, {2, 3}, idx);
        f.tensors["num_accepted"] = Tensor::of(DType::I32, {2}, acc);
        return load_error(f);
    };
    const int slots = std::stoi(good.metadata.at("slots"));
    CHECK(with({1, 2, 3, 4, 5, 6}, {1, 3}) == "");
    CHECK(with({-1, 0, -7, 0, 0, 0}, {2, 1}) == "");  // "none" may repeat
    CHECK(with({1, 2, 3, 4, 5, 3}, {1, 1}).find("slot 3 appears more than once") != std::string::npos);
    CHECK(with({1, 2, 3, 4, 5, slots}, {1, 1}).find("out of range") != std::string::npos);
    CHECK(with({1, 2, 3, 4, 5, 6}, {0, 1}).find("num_accepted[0] = 0 is outside 1..L") != std::string::npos);
    CHECK(with({1, 2, 3, 4, 5, 6}, {1, 4}).find("num_accepted[1] = 4 is outside 1..L") != std::string::npos);
    CHECK(with({1, 2, 3, 4, 5, 6}, {1, -2}).find("num_accepted[1]") != std::string::npos);
}

TEST_CASE("generator: deterministic per seed, distinct live slots, null requests, zero pad rows, scales") {
    FixtureOptions fo;
    fo.null_requests = 2;
    fo.extra_slots = 4;
    StepInputs a = make_fixture(small(5, 3, 4, ConvLayout::ds, 7), fo);
    StepInputs b = make_fixture(small(5, 3, 4, ConvLayout::ds, 7), fo);
    StepInputs other = make_fixture(small(5, 3, 4, ConvLayout::ds, 8), fo);
    CHECK(a.to_file().get("in_proj_w").bytes == b.to_file().get("in_proj_w").bytes);
    CHECK(a.to_file().get("state_indices").bytes == b.to_file().get("state_indices").bytes);
    CHECK(a.to_file().get("prefix").bytes != other.to_file().get("prefix").bytes);
    const Config& c = a.cfg;
    CHECK(c.slots == c.S() + 1 + 4);
    std::set<int32_t> live;
    int null_requests = 0;
    for (int r = 0; r < c.R; ++r) {
        int nulls = 0;
        for (int t = 0; t < c.L; ++t) {
            const int32_t s = a.idx(r, t);
            if (s <= 0) { ++nulls; continue; }
            CHECK(s < c.slots);
            CHECK(live.insert(s).second);  // distinct
        }
        CHECK((nulls == 0 || nulls == c.L));
        null_requests += nulls == c.L;
        CHECK(a.num_accepted[size_t(r)] >= 1);
        CHECK(a.num_accepted[size_t(r)] <= c.L);
    }
    CHECK(null_requests == 2);
    CHECK(live.count(0) == 0);  // slot 0 is never live
    for (int64_t i = int64_t(c.min_N()) * c.D; i < int64_t(c.N) * c.D; ++i) CHECK(a.in_proj_w[size_t(i)].bits == 0);
    for (float x : a.A_log) {
        CHECK(x >= -2.0f);
        CHECK(x <= 1.0f);
    }
    // weights ~ N(0, 1/sqrt(fan_in)): the in_proj rows' rms is near D^-1/2
    double ss = 0;
    for (int64_t i = 0; i < int64_t(c.min_N()) * c.D; ++i) ss += std::pow(double(a.in_proj_w[size_t(i)].to_float()), 2);
    CHECK(std::sqrt(ss / double(int64_t(c.min_N()) * c.D)) == doctest::Approx(1 / std::sqrt(double(c.D))).epsilon(0.05));
    // some rows of the bank are ten times louder
    double lo = 1e9, hi = 0;
    for (int row = 0; row < c.S() * 8; ++row) {
        double rs = 0;
        for (int d = 0; d < c.D; ++d) rs += std::pow(double(a.blocks[size_t(row * c.D + d)].to_float()), 2);
        rs = std::sqrt(rs / c.D);
        lo = std::min(lo, rs);
        hi = std::max(hi, rs);
    }
    CHECK(hi / lo > 5);
    CHECK_THROWS_AS(make_fixture(small(2, 2, 2), FixtureOptions{3}), BadInput);
}
}
