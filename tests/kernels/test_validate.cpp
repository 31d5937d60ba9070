// The launcher's host-side checks, without a device: views are fake addresses (nothing is read).
// Each planted defect must be refused with a message naming the tensor; the valid set must pass.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/wait.h>

#include "core/error.hpp"
#include "kernels/kda_pre.hpp"
#include "tests/bad_input_message.hpp"

using namespace monokda;

namespace {

Config k3_step(int R = 2, int L = 4) {
    Config c = Config::preset("k3");
    c.R = R, c.L = L, c.nb = 4, c.slots = R * L + 4;
    return c;
}

gpu::View view(uintptr_t addr, DType dt, std::vector<int64_t> shape) {
    gpu::View v;
    v.data = reinterpret_cast<const void*>(addr);
    v.dtype = dt;
    v.strides.assign(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) v.strides[i - 1] = v.strides[i] * shape[i];
    v.shape = std::move(shape);
    return v;
}

// Every tensor at its own 1 GiB-aligned fake address: nothing overlaps.
gpu::KdaTensors valid(const Config& c) {
    const int64_t S = c.S(), D = c.D, E = c.E();
    uintptr_t at = uintptr_t(1) << 40;
    auto next = [&]() { return at += uintptr_t(1) << 30; };
    gpu::KdaTensors t;
    t.prefix = view(next(), DType::BF16, {S, D});
    t.delta = view(next(), DType::BF16, {S, D});
    t.blocks = view(next(), DType::BF16, {S, 8, D});
    t.res_norm_w = view(next(), DType::BF16, {D});
    t.res_proj_w = view(next(), DType::BF16, {D});
    t.input_norm_w = view(next(), DType::BF16, {D});
    t.in_proj_w = view(next(), DType::BF16, {c.N, D});
    t.f_b_w = view(next(), DType::BF16, {E, c.F});
    t.conv_w = view(next(), DType::F32, {c.C, c.W});
    t.A_log = view(next(), DType::F32, {c.H});
    t.dt_bias = view(next(), DType::F32, {E});
    t.o_norm_w = view(next(), DType::BF16, {c.V});
    t.conv_state = view(next(), DType::BF16, {c.slots, c.conv_len(), c.C});
    t.ssm_state = view(next(), DType::F32, {c.slots, c.H, c.V, c.K});
    t.state_indices = view(next(), DType::I32, {c.R, c.L});
    t.num_accepted = view(next(), DType::I32, {c.R});
    t.prefix_out = view(next(), DType::BF16, {S, D});
    t.core_out = view(next(), DType::BF16, {S, E});
    t.x = view(next(), DType::BF16, {S, D});
    t.proj = view(next(), DType::BF16, {S, c.N});
    t.qkv = view(next(), DType::BF16, {S, c.C});
    t.g1 = view(next(), DType::BF16, {S, E});
    t.o = view(next(), DType::BF16, {S, E});
    return t;
}

std::string refusal(const Config& c, const gpu::KdaTensors& t, bool exp = true) {
    return test::bad_input_message([&] { gpu::validate_tensors(c, t, exp); });
}

}  // namespace

TEST_CASE("a valid set of views passes, strided rows and packed state pages included") {
    const Config c = k3_step();
    CHECK(refusal(c, valid(c)) == "");
    gpu::KdaTensors t = valid(c);
    t.prefix.strides[0] = c.D + 64;  // padded rows
    t.blocks.strides = {8 * (c.D + 8), c.D + 8, 1};
    CHECK(refusal(c, t) == "");
    // one page a slot: conv state first, then the ssm state, 16-byte aligned
    const int64_t conv_bytes = int64_t(c.conv_len()) * c.C * 2, ssm_bytes = int64_t(c.H) * c.V * c.K * 4;
    const int64_t page = conv_bytes + ssm_bytes + 256;
    t.ssm_state.data = static_cast<const char*>(t.conv_state.data) + conv_bytes + 128;
    t.conv_state.strides[0] = page / 2;
    t.ssm_state.strides[0] = page / 4;
    CHECK(refusal(c, t) == "");
    // o is not needed when the launch does not export it; g1 always is (the chunk tasks hand g1 through it)
    const gpu::View g1 = t.g1;
    t.o = gpu::View{};
    CHECK(refusal(c, t, false) == "");
    CHECK(refusal(c, t, true).find("'o'") != std::string::npos);
    t.g1 = gpu::View{};
    CHECK(refusal(c, t, false).find("'g1'") != std::string::npos);
    t.g1 = g1;
}

TEST_CASE("every planted defect is refused, naming the tensor") {
    const Config c = k3_step();
    struct Plant {
        const char* expect;
        void (*plant)(gpu::KdaTensors&, const Config&);
    };
    const Plant plants[] = {
        {"'prefix' has dtype", [](gpu::KdaTensors& t, const Config&) { t.prefix.dtype = DType::F32; }},
        {"'proj' has shape", [](gpu::KdaTensors& t, const Config&) { t.proj.shape[1] = 6272; }},
        {"'in_proj_w' is not 16-byte aligned",
         [](gpu::KdaTensors& t, const Config&) { t.in_proj_w.data = static_cast<const char*>(t.in_proj_w.data) + 2; }},
        {"'in_proj_w' has strides", [](gpu::KdaTensors& t, const Config& c) { t.in_proj_w.strides[0] = c.D + 8; }},
        {"'delta': stride", [](gpu::KdaTensors& t, const Config& c) { t.delta.strides[0] = c.D - 8; }},
        {"not a multiple of 8", [](gpu::KdaTensors& t, const Config& c) { t.prefix_out.strides[0] = c.D + 4; }},
        {"'ssm_state': slot stride", [](gpu::KdaTensors& t, const Config&) { t.ssm_state.strides[0] -= 4; }},
        {"'conv_state': a slot must be contiguous", [](gpu::KdaTensors& t, const Config&) { t.conv_state.strides[1] += 1; }},
        {"'state_indices' has dtype", [](gpu::KdaTensors& t, const Config&) { t.state_indices.dtype = DType::F32; }},
        {"'num_accepted' has shape", [](gpu::KdaTensors& t, const Config& c) { t.num_accepted.shape = {c.R + 1}; }},
        {"'core_out': null device pointer", [](gpu::KdaTensors& t, const Config&) { t.core_out.data = nullptr; }},
        {"overlap", [](gpu::KdaTensors& t, const Config&) { t.qkv.data = static_cast<const char*>(t.proj.data) + 4096; }},
        {"overlap", [](gpu::KdaTensors& t, const Config&) { t.x.data = t.prefix.data; }},
        {"overlap",  // ssm pages placed over the conv part of each page
         [](gpu::KdaTensors& t, const Config& c) {
             const int64_t page = int64_t(c.conv_len()) * c.C * 2 + int64_t(c.H) * c.V * c.K * 4;
             t.ssm_state.data = static_cast<const char*>(t.conv_state.data) + 64;
             t.conv_state.strides[0] = page / 2;
             t.ssm_state.strides[0] = page / 4;
         }},
    };
    for (const Plant& p : plants) {
        gpu::KdaTensors t = valid(c);
        p.plant(t, c);
        const std::string msg = refusal(c, t);
        CHECK_MESSAGE(msg.find(p.expect) != std::string::npos, "expected '", p.expect, "', got '", msg, "'");
    }
}

TEST_CASE("only the production shape and a step the kernel can run are accepted") {
    Config small = Config::preset("small");
    small.slots = 12;
    CHECK_THROWS_WITH_AS(gpu::check_supported(small), doctest::Contains("production shape"), BadInput);
    Config c = k3_step(16, 8);  // S = 128
    CHECK_THROWS_WITH_AS(gpu::check_supported(c), doctest::Contains("exceeds 64"), BadInput);
    c = k3_step(64, 1);
    CHECK_NOTHROW(gpu::check_supported(c));
    c.nb = 8, c.block_write = true;
    CHECK_THROWS_AS(gpu::check_supported(c), BadInput);
}

TEST_CASE("monokda gpu: without a usable GPU or with a non-production fixture, exit 2 and nothing written") {
    const std::string dir = std::string(MONOKDA_TEST_TMP) + "/gpu_cli";
    std::system(("mkdir -p " + dir + " && rm -f " + dir + "/out.safetensors").c_str());
    const std::string fx = dir + "/small.safetensors", out = dir + "/out.safetensors";
    REQUIRE(std::system((std::string(MONOKDA_BIN) + " fixture --config small -o " + fx + " > /dev/null").c_str()) == 0);
    const int rc = std::system((std::string(MONOKDA_BIN) + " gpu " + fx + " -o " + out + " 2> " + dir + "/err.txt").c_str());
    CHECK(WEXITSTATUS(rc) == 2);
    std::ifstream err(dir + "/err.txt");
    const std::string msg((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    const gpu::DeviceInfo d = gpu::probe();
    if (!d.built) CHECK_MESSAGE(msg.find("built without a GPU backend") != std::string::npos, msg);
    else if (!d.present) CHECK_MESSAGE(msg.find("no GPU") != std::string::npos, msg);
    else CHECK_MESSAGE(msg.find("production shape") != std::string::npos, msg);
    CHECK_FALSE(std::ifstream(out).good());
    // a bad option is refused before any device is looked for
    const int bad = std::system((std::string(MONOKDA_BIN) + " gpu " + fx + " -o " + out + " --placement pairs 2> " + dir + "/err2.txt").c_str());
    CHECK(WEXITSTATUS(bad) == 2);
    std::ifstream err2(dir + "/err2.txt");
    const std::string msg2((std::istreambuf_iterator<char>(err2)), std::istreambuf_iterator<char>());
    CHECK_MESSAGE(msg2.find("--placement must be auto, index or paired") != std::string::npos, msg2);
    CHECK_FALSE(std::ifstream(out).good());
}
