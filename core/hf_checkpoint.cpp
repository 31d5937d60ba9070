// One TP rank's KDA layer from a Kimi-K3 Hugging Face checkpoint (core/hf_checkpoint.hpp,
// docs/fixtures.md): its shards found, named tensors read, sliced and laid out as SPEC §2's.
#include "core/hf_checkpoint.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/safetensors.hpp"

namespace monokda {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Where each tensor of the checkpoint lives, with each shard's header read once.
class Checkpoint {
public:
    explicit Checkpoint(const std::string& dir) : dir_(dir) {
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) bad_input("--from-hf: '" + dir + "' is not a directory");
        const fs::path index = fs::path(dir) / "model.safetensors.index.json";
        if (fs::exists(index, ec)) read_index(index.string());
        else scan_dir();
    }

    const std::map<std::string, std::string>& names() const { return where_; }
    bool has(const std::string& name) const { return where_.count(name) != 0; }

    const TensorEntry& entry(const std::string& name) {
        const std::string& file = shard_of(name);
        const SafetensorsHeader& h = header(file);
        auto it = h.tensors.find(name);
        if (it == h.tensors.end())
            bad_input("checkpoint: the index puts tensor '" + name + "' in " + file + ", which does not hold it");
        return it->second;
    }

    Tensor rows(const std::string& name, int64_t row0, int64_t n) {
        entry(name);  // checks presence
        const std::string& file = shard_of(name);
        return read_safetensors_tensor(path(file), header(file), name, row0, n);
    }

private:
    std::string dir_;
    std::map<std::string, std::string> where_;  // tensor name -> shard file name
    std::map<std::string, SafetensorsHeader> headers_;

    std::string path(const std::string& file) const { return (fs::path(dir_) / file).string(); }

    const std::string& shard_of(const std::string& name) const {
        auto it = where_.find(name);
        if (it == where_.end()) bad_input("checkpoint: missing tensor '" + name + "'");
        return it->second;
    }

    const SafetensorsHeader& header(const std::string& file) {
        auto it = headers_.find(file);
        if (it == headers_.end()) it = headers_.emplace(file, read_safetensors_header(path(file))).first;
        return it->second;
    }

    void read_index(const std::string& index) {
        const std::string text = read_text_file(index, uint64_t(1) << 30, "checkpoint index");
        json j;
        try {
            j = json::parse(text);
        } catch (const json::exception& e) {
            bad_input(index + ": not valid JSON: " + e.what());
        }
        if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
            bad_input(index + ": no \"weight_map\" object");
        for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
            if (!it.value().is_string()) bad_input(index + ": weight_map entry of '" + it.key() + "' is not a string");
            std::string file = it.value().get<std::string>();
            // shards sit next to the index; a path that leaves the folder is not a shard
            if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos ||
                file == "." || file == "..")
                bad_input(index + ": weight_map names shard '" + file + "' for '" + it.key() +
                          "', which is not a file name in the checkpoint folder");
            where_[it.key()] = file;
        }
    }

    void scan_dir() {
        std::vector<std::string> files;
        for (const auto& e : fs::directory_iterator(dir_))
            if (e.is_regular_file() && e.path().extension() == ".safetensors") files.push_back(e.path().filename().string());
        if (files.empty()) bad_input("--from-hf: no *.safetensors files (and no model.safetensors.index.json) in '" + dir_ + "'");
        std::sort(files.begin(), files.end());
        for (const std::string& f : files)
            for (const auto& [name, e] : header(f).tensors) {
                auto [it, fresh] = where_.emplace(name, f);
                if (!fresh) bad_input("checkpoint: tensor '" + name + "' is in both " + it->second + " and " + f);
            }
    }
};

// Finds the name prefix of layer i (any "...layers.{i}." holding self_attn.q_proj.weight).
std::string find_prefix(const Checkpoint& ck, int layer) {
    const std::string key = "layers." + std::to_string(layer) + ".";
    const std::string q = "self_attn.q_proj.weight";
    std::vector<std::string> found;
    bool any = false;
    int max_layer = -1;
    for (const auto& [name, file] : ck.names()) {
        size_t p = name.find("layers.");
        if (p != std::string::npos) {
            const char* s = name.c_str() + p + 7;
            char* end = nullptr;
            long v = std::strtol(s, &end, 10);
            if (end != s && *end == '.') max_layer = std::max<int>(max_layer, int(v));
        }
        size_t k = name.find(key);
        if (k == std::string::npos || (k > 0 && name[k - 1] != '.')) continue;
        any = true;
        if (name.compare(k + key.size(), std::string::npos, q) == 0) found.push_back(name.substr(0, k + key.size()));
    }
    if (found.size() == 1) return found[0];
    if (found.size() > 1) bad_input("checkpoint: layer " + std::to_string(layer) + " is ambiguous (" + found[0] +
                                    " and " + found[1] + ")");
    if (!any)
        bad_input("checkpoint: layer " + std::to_string(layer) + " is out of range (layers 0.." +
                  std::to_string(max_layer) + " found)");
    bad_input("checkpoint: layer " + std::to_string(layer) + " is not a KDA layer (no self_attn.q_proj.weight)");
}

}  // namespace

HfLayerWeights load_hf_layer(const std::string& dir, int layer, int tp_rank, int tp_size) {
    if (layer < 0) bad_input("--layer must be >= 0 (got " + std::to_string(layer) + ")");
    if (tp_size < 1) bad_input("--tp-size must be >= 1 (got " + std::to_string(tp_size) + ")");
    if (tp_rank < 0 || tp_rank >= tp_size)
        bad_input("--tp-rank must be in 0..tp_size-1 = 0.." + std::to_string(tp_size - 1) + " (got " +
                  std::to_string(tp_rank) + ")");
    Checkpoint ck(dir);
    HfLayerWeights w;
    w.prefix = find_prefix(ck, layer);
    const std::string P = w.prefix, A = P + "self_attn.";

    // The dims come from the shapes; every other tensor is checked against them.
    auto entry = [&](const std::string& name, std::initializer_list<const char*> dtypes) -> const TensorEntry& {
        const TensorEntry& e = ck.entry(name);
        bool ok = false;
        std::string want;
        for (const char* d : dtypes) { ok = ok || e.dtype == d; want += std::string(want.empty() ? "" : " or ") + d; }
        if (!ok) bad_input("checkpoint: tensor '" + name + "' has dtype " + e.dtype + ", expected " + want);
        return e;
    };
    auto need_shape = [&](const std::string& name, const TensorEntry& e, const std::vector<int64_t>& s) {
        if (e.shape != s)
            bad_input("checkpoint: tensor '" + name + "' has shape " + e.shape_str() + ", expected " + shape_str(s));
    };
    const TensorEntry& q = entry(A + "q_proj.weight", {"BF16"});
    if (q.shape.size() != 2) bad_input("checkpoint: tensor '" + A + "q_proj.weight' has shape " + q.shape_str() + ", expected 2-D");
    const int64_t E_total = q.shape[0], D = q.shape[1];
    const TensorEntry& b = entry(A + "b_proj.weight", {"BF16"});
    if (b.shape.size() != 2 || b.shape[1] != D || b.shape[0] < 1)
        bad_input("checkpoint: tensor '" + A + "b_proj.weight' has shape " + b.shape_str() + ", expected [heads, " +
                  std::to_string(D) + "]");
    const int64_t H_total = b.shape[0];
    if (E_total % H_total != 0)
        bad_input("checkpoint: q_proj rows (" + std::to_string(E_total) + ") are not a multiple of the b_proj heads (" +
                  std::to_string(H_total) + ")");
    const int64_t K = E_total / H_total;
    const TensorEntry& fa = entry(A + "f_a_proj.weight", {"BF16"});
    if (fa.shape.size() != 2 || fa.shape[1] != D || fa.shape[0] < 1)
        bad_input("checkpoint: tensor '" + A + "f_a_proj.weight' has shape " + fa.shape_str() + ", expected [F, " +
                  std::to_string(D) + "]");
    const int64_t F = fa.shape[0];
    const TensorEntry& qc = entry(A + "q_conv1d.weight", {"F32"});
    if (qc.shape.size() < 2 || qc.shape.size() > 3 || qc.shape[0] != E_total)
        bad_input("checkpoint: tensor '" + A + "q_conv1d.weight' has shape " + qc.shape_str() + ", expected [" +
                  std::to_string(E_total) + ", 1, W]");
    const int64_t W = qc.shape.back();

    if (H_total % tp_size != 0)
        bad_input("--tp-size " + std::to_string(tp_size) + " does not divide the " + std::to_string(H_total) +
                  " KDA heads of the checkpoint");
    const int64_t H = H_total / tp_size, E = H * K, h0 = tp_rank * H;
    w.D = int(D); w.H = int(H); w.K = int(K); w.F = int(F); w.W = int(W); w.H_total = int(H_total);
    w.N = Config::padded_N(int(E), int(F), int(H));

    for (const char* n : {"q_proj", "k_proj", "v_proj", "g_proj"}) {
        const std::string name = A + n + ".weight";
        need_shape(name, entry(name, {"BF16"}), {E_total, D});
    }
    need_shape(A + "f_b_proj.weight", entry(A + "f_b_proj.weight", {"BF16"}), {E_total, F});
    for (const char* n : {"q_conv1d", "k_conv1d", "v_conv1d"}) {
        const std::string name = A + n + ".weight";
        const TensorEntry& e = entry(name, {"F32"});
        if (e.shape != std::vector<int64_t>{E_total, 1, W} && e.shape != std::vector<int64_t>{E_total, W})
            bad_input("checkpoint: tensor '" + name + "' has shape " + e.shape_str() + ", expected " +
                      shape_str({E_total, 1, W}));
    }
    need_shape(A + "dt_bias", entry(A + "dt_bias", {"F32"}), {E_total});
    need_shape(A + "o_norm.weight", entry(A + "o_norm.weight", {"F32", "BF16"}), {K});
    need_shape(P + "self_attention_res_norm.weight", entry(P + "self_attention_res_norm.weight", {"BF16"}), {D});
    need_shape(P + "input_layernorm.weight", entry(P + "input_layernorm.weight", {"BF16"}), {D});
    {
        const std::string name = P + "self_attention_res_proj.weight";
        const TensorEntry& e = entry(name, {"BF16"});
        if (e.shape != std::vector<int64_t>{1, D} && e.shape != std::vector<int64_t>{D})
            bad_input("checkpoint: tensor '" + name + "' has shape " + e.shape_str() + ", expected " + shape_str({1, D}));
    }
    // A_log: one value a head, stored as [H_total], as [1, 1, H_total, 1], or padded to [head_dim]
    // (the first H_total entries are the heads).
    const TensorEntry& al = entry(A + "A_log", {"F32"});
    {
        int non_unit = 0;
        for (int64_t d : al.shape) non_unit += d != 1;
        if (non_unit > 1 || al.numel() < H_total)
            bad_input("checkpoint: tensor '" + A + "A_log' has shape " + al.shape_str() + ", expected " +
                      std::to_string(H_total) + " head values ([" + std::to_string(H_total) +
                      "], [1, 1, " + std::to_string(H_total) + ", 1] or a padded [n >= " + std::to_string(H_total) + "])");
    }

    // Read the rank's rows.
    auto bf = [](const Tensor& t) { return t.as<bf16>(); };
    auto f32 = [](const Tensor& t) { return t.as<float>(); };
    w.in_proj_w.assign(size_t(w.N) * D, bf16::from_bits(0));  // pad rows stay zero
    size_t row = 0;
    auto put = [&](const std::vector<bf16>& rows) {
        std::copy(rows.begin(), rows.end(), w.in_proj_w.begin() + row * D);
        row += rows.size() / size_t(D);
    };
    for (const char* n : {"q_proj", "k_proj", "v_proj", "g_proj"}) put(bf(ck.rows(A + n + ".weight", h0 * K, E)));
    put(bf(ck.rows(A + "f_a_proj.weight", 0, F)));  // replicated on every rank
    put(bf(ck.rows(A + "b_proj.weight", h0, H)));
    w.f_b_w = bf(ck.rows(A + "f_b_proj.weight", h0 * K, E));
    for (const char* n : {"q_conv1d", "k_conv1d", "v_conv1d"}) {
        std::vector<float> c = f32(ck.rows(A + n + ".weight", h0 * K, E));
        w.conv_w.insert(w.conv_w.end(), c.begin(), c.end());
    }
    std::vector<float> a_log = f32(ck.rows(A + "A_log", 0, -1));
    w.A_log.assign(a_log.begin() + h0, a_log.begin() + h0 + H);
    w.dt_bias = f32(ck.rows(A + "dt_bias", h0 * K, E));
    Tensor on = ck.rows(A + "o_norm.weight", 0, -1);
    if (on.dtype == DType::BF16) {
        w.o_norm_w = bf(on);
    } else {
        for (float v : f32(on)) w.o_norm_w.push_back(bf16::round(v));
    }
    w.res_norm_w = bf(ck.rows(P + "self_attention_res_norm.weight", 0, -1));
    w.res_proj_w = bf(ck.rows(P + "self_attention_res_proj.weight", 0, -1));
    w.input_norm_w = bf(ck.rows(P + "input_layernorm.weight", 0, -1));
    return w;
}

void set_model_dims(const HfLayerWeights& w, Config& cfg) {
    cfg.D = w.D; cfg.H = w.H; cfg.K = w.K; cfg.V = w.K; cfg.F = w.F; cfg.W = w.W;
    cfg.C = 3 * w.E();
    cfg.N = w.N;
}

void apply_weights(const HfLayerWeights& w, StepInputs& in) {
    const Config& c = in.cfg;
    if (c.D != w.D || c.H != w.H || c.K != w.K || c.V != w.K || c.F != w.F || c.W != w.W || c.N != w.N)
        bad_input("checkpoint layer dims (D " + std::to_string(w.D) + ", H " + std::to_string(w.H) + ", K " +
                  std::to_string(w.K) + ", F " + std::to_string(w.F) + ", W " + std::to_string(w.W) + ", N " +
                  std::to_string(w.N) + ") differ from the fixture's (D " + std::to_string(c.D) + ", H " +
                  std::to_string(c.H) + ", K " + std::to_string(c.K) + ", F " + std::to_string(c.F) + ", W " +
                  std::to_string(c.W) + ", N " + std::to_string(c.N) + ")");
    in.res_norm_w = w.res_norm_w;
    in.res_proj_w = w.res_proj_w;
    in.input_norm_w = w.input_norm_w;
    in.in_proj_w = w.in_proj_w;
    in.f_b_w = w.f_b_w;
    in.conv_w = w.conv_w;
    in.A_log = w.A_log;
    in.dt_bias = w.dt_bias;
    in.o_norm_w = w.o_norm_w;
}

}  // namespace monokda
