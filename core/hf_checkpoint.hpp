// One TP rank's KDA layer weights from a Kimi-K3 Hugging Face checkpoint (safetensors shards),
// laid out as the fixture tensors of SPEC §2. See docs/fixtures.md for the names, shapes and slicing.
#pragma once
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "core/step.hpp"

namespace monokda {

struct HfLayerWeights {
    // dims of one rank; H_total/E_total are the model's, before TP slicing
    int D = 0, H = 0, K = 0, F = 0, W = 0, N = 0, H_total = 0;
    std::string prefix;  // tensor-name prefix of the layer, e.g. "model.layers.1."

    std::vector<bf16> res_norm_w, res_proj_w, input_norm_w;  // [D]
    std::vector<bf16> in_proj_w;                              // [N, D]: q|k|v|g|f_a|beta|zero pad
    std::vector<bf16> f_b_w;                                  // [E, F]
    std::vector<float> conv_w;                                // [3E, W]: q|k|v channels
    std::vector<float> A_log;                                 // [H]
    std::vector<float> dt_bias;                               // [E]
    std::vector<bf16> o_norm_w;                               // [K], f32 in the checkpoint, rounded

    int E() const { return H * K; }
};

// Reads layer LAYER for rank TP_RANK of TP_SIZE from DIR: shards listed by
// model.safetensors.index.json when present, otherwise every *.safetensors file in DIR.
// Reads only the rows the rank needs. BadInput names any problem (missing tensor, wrong dtype or
// shape, layer out of range or not a KDA layer, TP size not dividing the heads).
HfLayerWeights load_hf_layer(const std::string& dir, int layer, int tp_rank, int tp_size);

// Sets the model dims of cfg (D, H, K, V, F, W, C, N) to those of the weights.
void set_model_dims(const HfLayerWeights& w, Config& cfg);

// Replaces the weight tensors of a fixture with w; BadInput if the dims differ.
void apply_weights(const HfLayerWeights& w, StepInputs& in);

}  // namespace monokda
