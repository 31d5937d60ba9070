// A small synthetic Kimi-K3-style HF checkpoint (names and layouts as docs/fixtures.md), written
// as two shards with or without model.safetensors.index.json. Every element of every tensor has
// its own value, so a loaded weight identifies the row it came from.
#pragma once
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <unistd.h>

#include "core/bf16.hpp"
#include "core/safetensors.hpp"

namespace monokda::test {

namespace fs = std::filesystem;

// model: D 32, 4 KDA heads of K 8 (E_total 32), F 8, W 4
constexpr int D = 32, HT = 4, K = 8, ET = HT * K, Fr = 8, W = 4;

struct Synthetic {
    std::map<std::string, Tensor> tensors;
    uint16_t next_bf16 = 0x3c00;  // 2^-7, counting up: every element a distinct finite bf16
    float next_f32 = 1000.0f;     // distinct integers

    Tensor bf(std::vector<int64_t> shape) {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        std::vector<bf16> v(static_cast<size_t>(n));
        for (auto& x : v) x = bf16::from_bits(next_bf16++);
        return Tensor::of(DType::BF16, std::move(shape), v);
    }
    Tensor f32(std::vector<int64_t> shape, float frac = 0) {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        std::vector<float> v(static_cast<size_t>(n));
        for (auto& x : v) x = (next_f32 += 1.0f) + frac;
        return Tensor::of(DType::F32, std::move(shape), v);
    }
};

inline Synthetic make_model(const std::string& root = "model.", std::vector<int64_t> a_log_shape = {HT}) {
    Synthetic s;
    auto& t = s.tensors;
    t[root + "embed_tokens.weight"] = s.bf({16, D});
    // layer 0 is an MLA layer: no KDA tensors
    t[root + "layers.0.self_attn.q_a_proj.weight"] = s.bf({8, D});
    t[root + "layers.0.input_layernorm.weight"] = s.bf({D});
    for (int i : {1, 2}) {
        const std::string p = root + "layers." + std::to_string(i) + ".", a = p + "self_attn.";
        for (const char* n : {"q_proj", "k_proj", "v_proj", "g_proj"}) t[a + n + ".weight"] = s.bf({ET, D});
        t[a + "b_proj.weight"] = s.bf({HT, D});
        t[a + "f_a_proj.weight"] = s.bf({Fr, D});
        t[a + "f_b_proj.weight"] = s.bf({ET, Fr});
        t[a + "o_proj.weight"] = s.bf({D, ET});
        for (const char* n : {"q_conv1d", "k_conv1d", "v_conv1d"}) t[a + n + ".weight"] = s.f32({ET, 1, W});
        t[a + "dt_bias"] = s.f32({ET});
        int64_t n = 1;
        for (int64_t d : a_log_shape) n *= d;
        Tensor al = s.f32(a_log_shape);
        if (n > HT) {  // padded: the tail past the heads is zero
            std::vector<float> v = al.as<float>();
            std::fill(v.begin() + HT, v.end(), 0.0f);
            al = Tensor::of(DType::F32, a_log_shape, v);
        }
        t[a + "A_log"] = al;
        t[a + "o_norm.weight"] = s.f32({K}, 0.3f);  // not exact in bf16: the loader rounds
        t[p + "self_attention_res_norm.weight"] = s.bf({D});
        t[p + "self_attention_res_proj.weight"] = s.bf({1, D});
        t[p + "input_layernorm.weight"] = s.bf({D});
        t[p + "mlp_res_norm.weight"] = s.bf({D});
    }
    return s;
}

inline std::string fresh_dir(const std::string& name) {
    fs::path p = fs::temp_directory_path() / ("monokda_test_hf_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p.string();
}

// Two shards (alternating tensors), with or without the index.
inline void write_checkpoint(const std::string& dir, const std::map<std::string, Tensor>& tensors, bool index = true) {
    TensorFile shard[2];
    nlohmann::json wm = nlohmann::json::object();
    int i = 0;
    for (const auto& [name, t] : tensors) {
        shard[i % 2].tensors[name] = t;
        wm[name] = i % 2 ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
        ++i;
    }
    shard[0].metadata["format"] = "pt";
    write_safetensors(dir + "/model-00001-of-00002.safetensors", shard[0]);
    write_safetensors(dir + "/model-00002-of-00002.safetensors", shard[1]);
    if (index) std::ofstream(dir + "/model.safetensors.index.json") << nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", wm}}.dump(1);
}

}  // namespace monokda::test
