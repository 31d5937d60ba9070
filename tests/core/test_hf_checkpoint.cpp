// The HF checkpoint loader on a small synthetic Kimi-K3-style checkpoint: every element of every
// tensor has its own value, so each weight of the rank's layer identifies the row it came from.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/fixture_gen.hpp"
#include "core/hf_checkpoint.hpp"
#include "tests/bad_input_message.hpp"
#include "tests/core/synthetic_checkpoint.hpp"

using namespace monokda;
using namespace monokda::test;

namespace {

std::vector<bf16> bf_rows(const Tensor& t, int64_t row0, int64_t rows) {
    REQUIRE(!t.shape.empty());
    REQUIRE(t.shape[0] >= row0 + rows);
    const int64_t width = t.numel() / t.shape[0];
    std::vector<bf16> all = t.as<bf16>();
    return std::vector<bf16>(all.begin() + row0 * width, all.begin() + (row0 + rows) * width);
}


// Checks every weight of the loaded rank against the source rows it must come from.
void check_rank(const HfLayerWeights& w, const std::map<std::string, Tensor>& src, const std::string& p, int rank, int tp) {
    const std::string a = p + "self_attn.";
    const int H = HT / tp, E = H * K, h0 = rank * H;
    CHECK(w.D == D);
    CHECK(w.H == H);
    CHECK(w.K == K);
    CHECK(w.F == Fr);
    CHECK(w.W == W);
    CHECK(w.H_total == HT);
    CHECK(w.N == (4 * E + Fr + H + 15) / 16 * 16);
    CHECK(w.prefix == p);
    auto rows = [&](size_t r0, size_t n) { return std::vector<bf16>(w.in_proj_w.begin() + r0 * D, w.in_proj_w.begin() + (r0 + n) * D); };
    size_t r = 0;
    for (const char* n : {"q_proj", "k_proj", "v_proj", "g_proj"}) {
        CAPTURE(n);
        CHECK(same_bits(rows(r, size_t(E)), bf_rows(src.at(a + n + ".weight"), h0 * K, E)));
        r += size_t(E);
    }
    CHECK(same_bits(rows(r, Fr), bf_rows(src.at(a + "f_a_proj.weight"), 0, Fr)));  // replicated
    r += Fr;
    CHECK(same_bits(rows(r, size_t(H)), bf_rows(src.at(a + "b_proj.weight"), h0, H)));
    r += size_t(H);
    for (size_t i = r * D; i < w.in_proj_w.size(); ++i) CHECK(w.in_proj_w[i].bits == 0);  // pad rows
    CHECK(same_bits(w.f_b_w, bf_rows(src.at(a + "f_b_proj.weight"), h0 * K, E)));
    int c = 0;
    for (const char* n : {"q_conv1d", "k_conv1d", "v_conv1d"}) {
        std::vector<float> all = src.at(a + n + ".weight").as<float>();
        for (int ch = 0; ch < E; ++ch, ++c)
            for (int j = 0; j < W; ++j) CHECK(w.conv_w[size_t(c * W + j)] == all[size_t((h0 * K + ch) * W + j)]);
    }
    std::vector<float> al = src.at(a + "A_log").as<float>(), dt = src.at(a + "dt_bias").as<float>();
    REQUIRE(w.A_log.size() == size_t(H));
    for (int h = 0; h < H; ++h) CHECK(w.A_log[size_t(h)] == al[size_t(h0 + h)]);
    REQUIRE(w.dt_bias.size() == size_t(E));
    for (int e = 0; e < E; ++e) CHECK(w.dt_bias[size_t(e)] == dt[size_t(h0 * K + e)]);
    std::vector<float> on = src.at(a + "o_norm.weight").as<float>();
    REQUIRE(w.o_norm_w.size() == size_t(K));
    for (int k = 0; k < K; ++k) CHECK(w.o_norm_w[size_t(k)].bits == bf16::round(on[size_t(k)]).bits);
    CHECK(same_bits(w.res_norm_w, src.at(p + "self_attention_res_norm.weight").as<bf16>()));
    CHECK(same_bits(w.res_proj_w, src.at(p + "self_attention_res_proj.weight").as<bf16>()));
    CHECK(same_bits(w.input_norm_w, src.at(p + "input_layernorm.weight").as<bf16>()));
}

std::string load_error(const std::string& dir, int layer, int rank, int tp) {
    return test::bad_input_message([&] { load_hf_layer(dir, layer, rank, tp); });
}

}  // namespace

TEST_SUITE("core") {

TEST_CASE("HF loader: two shards and an index; each rank gets its heads' rows, f_a replicated") {
    Synthetic m = make_model();
    const std::string dir = fresh_dir("index");
    write_checkpoint(dir, m.tensors);
    for (int tp : {1, 2, 4})
        for (int rank = 0; rank < tp; ++rank)
            for (int layer : {1, 2}) {
                CAPTURE(tp);
                CAPTURE(rank);
                CAPTURE(layer);
                check_rank(load_hf_layer(dir, layer, rank, tp), m.tensors, "model.layers." + std::to_string(layer) + ".",
                           rank, tp);
            }
    fs::remove_all(dir);
}

TEST_CASE("HF loader: without an index every shard is scanned; other name roots; A_log shapes") {
    struct Case { std::string root; std::vector<int64_t> a_log; bool index; };
    const Case cases[] = {{"model.", {1, 1, HT, 1}, false}, {"language_model.model.", {K}, true},
                          {"language_model.model.", {HT}, false}};
    for (const Case& k : cases) {
        CAPTURE(k.root);
        Synthetic m = make_model(k.root, k.a_log);
        const std::string dir = fresh_dir("variants");
        write_checkpoint(dir, m.tensors, k.index);
        check_rank(load_hf_layer(dir, 2, 1, 2), m.tensors, k.root + "layers.2.", 1, 2);
        fs::remove_all(dir);
    }
}

TEST_CASE("HF loader: bad checkpoints and bad requests are bad input naming the problem") {
    const Synthetic base = make_model();
    const std::string L1 = "model.layers.1.", A1 = L1 + "self_attn.";
    struct Case { const char* what; std::function<void(std::map<std::string, Tensor>&)> spoil; const char* needle; };
    const Case cases[] = {
        {"missing tensor", [&](auto& t) { t.erase(A1 + "g_proj.weight"); }, "missing tensor 'model.layers.1.self_attn.g_proj.weight'"},
        {"missing norm", [&](auto& t) { t.erase(L1 + "input_layernorm.weight"); }, "input_layernorm.weight"},
        {"wrong shape", [&](auto& t) { t[A1 + "k_proj.weight"] = Synthetic().bf({ET, D - 1}); }, "k_proj.weight' has shape [32, 31], expected [32, 32]"},
        {"wrong dtype", [&](auto& t) { t[A1 + "v_proj.weight"] = Synthetic().f32({ET, D}); }, "v_proj.weight' has dtype F32, expected BF16"},
        {"conv dtype", [&](auto& t) { t[A1 + "k_conv1d.weight"] = Synthetic().bf({ET, 1, W}); }, "k_conv1d.weight' has dtype BF16"},
        {"conv shape", [&](auto& t) { t[A1 + "v_conv1d.weight"] = Synthetic().f32({ET, 1, W + 1}); }, "v_conv1d.weight' has shape"},
        {"A_log too short", [&](auto& t) { t[A1 + "A_log"] = Synthetic().f32({HT - 1}); }, "A_log' has shape [3]"},
        {"A_log 2-D", [&](auto& t) { t[A1 + "A_log"] = Synthetic().f32({2, HT}); }, "A_log' has shape [2, 4]"},
        {"dt_bias shape", [&](auto& t) { t[A1 + "dt_bias"] = Synthetic().f32({ET + 1}); }, "dt_bias' has shape"},
        {"o_norm shape", [&](auto& t) { t[A1 + "o_norm.weight"] = Synthetic().f32({K + 1}); }, "o_norm.weight' has shape"},
        {"res_proj shape", [&](auto& t) { t[L1 + "self_attention_res_proj.weight"] = Synthetic().bf({2, D}); }, "self_attention_res_proj.weight' has shape"},
        {"q rows not a multiple of heads", [&](auto& t) { t[A1 + "b_proj.weight"] = Synthetic().bf({3, D}); }, "not a multiple"},
    };
    for (const Case& k : cases) {
        CAPTURE(k.what);
        auto t = base.tensors;
        k.spoil(t);
        const std::string dir = fresh_dir("bad");
        write_checkpoint(dir, t);
        const std::string msg = load_error(dir, 1, 0, 2);
        CHECK_MESSAGE(msg.find(k.needle) != std::string::npos, msg);
        fs::remove_all(dir);
    }

    const std::string dir = fresh_dir("requests");
    write_checkpoint(dir, base.tensors);
    CHECK(load_error(dir, 7, 0, 2).find("layer 7 is out of range (layers 0..2 found)") != std::string::npos);
    CHECK(load_error(dir, 0, 0, 2).find("layer 0 is not a KDA layer") != std::string::npos);
    CHECK(load_error(dir, -1, 0, 2).find("--layer") != std::string::npos);
    CHECK(load_error(dir, 1, 0, 3).find("--tp-size 3 does not divide the 4 KDA heads") != std::string::npos);
    CHECK(load_error(dir, 1, 2, 2).find("--tp-rank") != std::string::npos);
    CHECK(load_error(dir, 1, 0, 0).find("--tp-size") != std::string::npos);
    CHECK(load_error(dir + "/nope", 1, 0, 1).find("not a directory") != std::string::npos);
    fs::remove(dir + "/model-00002-of-00002.safetensors");
    CHECK(load_error(dir, 1, 0, 1).find("cannot open") != std::string::npos);
    std::ofstream(dir + "/model.safetensors.index.json") << R"({"weight_map": {"x": "../escape.safetensors"}})";
    CHECK(load_error(dir, 1, 0, 1).find("not a file name in the checkpoint folder") != std::string::npos);
    std::ofstream(dir + "/model.safetensors.index.json") << R"({"weight_map": [)";
    CHECK(load_error(dir, 1, 0, 1).find("not valid JSON") != std::string::npos);
    std::ofstream(dir + "/model.safetensors.index.json") << R"({"metadata": {}})";
    CHECK(load_error(dir, 1, 0, 1).find("weight_map") != std::string::npos);
    fs::remove_all(dir);

    const std::string empty = fresh_dir("empty");
    CHECK(load_error(empty, 1, 0, 1).find("no *.safetensors") != std::string::npos);
    // the same tensor in two shards, no index to say which
    write_checkpoint(empty, base.tensors, false);
    TensorFile dup;
    dup.tensors[A1 + "A_log"] = base.tensors.at(A1 + "A_log");
    write_safetensors(empty + "/extra.safetensors", dup);
    CHECK(load_error(empty, 1, 0, 1).find("is in both") != std::string::npos);
    fs::remove_all(empty);
}

TEST_CASE("HF weights replace a generated fixture's weights; its dims must match") {
    Synthetic m = make_model();
    const std::string dir = fresh_dir("apply");
    write_checkpoint(dir, m.tensors);
    HfLayerWeights w = load_hf_layer(dir, 1, 1, 2);
    Config c = Config::preset("small");
    set_model_dims(w, c);
    CHECK(c.D == D);
    CHECK(c.C == 3 * 2 * K);
    StepInputs in = make_fixture(c);
    apply_weights(w, in);
    CHECK(same_bits(in.in_proj_w, w.in_proj_w));
    CHECK(in.A_log == w.A_log);
    CHECK_NOTHROW(StepInputs::from_file(in.to_file()));
    StepInputs other = make_fixture(Config::preset("small"));
    CHECK_THROWS_WITH_AS(apply_weights(w, other), doctest::Contains("differ from the fixture's"), BadInput);
    fs::remove_all(dir);
}
}
