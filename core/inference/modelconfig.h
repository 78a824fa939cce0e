// The parts of a Hugging Face config.json that the C++ model families need, selected by
// model_type: "gpt2", or the Llama-like decoders ("llama", "mistral", "qwen2", "qwen3", "gemma",
// "gemma2", "phi3", "mixtral", "qwen2_moe"), with transformers 5's defaults for absent keys.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::inference {

enum class ModelFamily { Gpt2, Llama };

// Rotary position embedding as transformers 5 computes it (modeling_rope_utils): the inverse
// frequencies of `type` over the first rotaryDim channels of each head, cos/sin times an attention
// factor (yarn, longrope). Read from rope_parameters (transformers 5) or rope_scaling + rope_theta
// (earlier versions).
struct RopeConfig {
    std::string type = "default"; // default, linear, dynamic, yarn, longrope, llama3
    double theta = 10000.0;
    int64_t rotaryDim = 0;                            // head_dim x partial_rotary_factor
    double factor = 1.0;                              // linear, dynamic, yarn, llama3, longrope
    int64_t maxPositions = 0;                         // max_position_embeddings (dynamic's reference length)
    int64_t originalMaxPositions = 0;                 // yarn, longrope, llama3
    double lowFreqFactor = 1.0, highFreqFactor = 4.0; // llama3
    double betaFast = 32.0, betaSlow = 1.0;           // yarn
    bool truncate = true;                             // yarn
    std::optional<double> attentionFactor;            // yarn, longrope; absent: from the factor
    std::optional<double> mscale, mscaleAllDim;       // yarn
    std::vector<double> shortFactor, longFactor;      // longrope, rotaryDim / 2 each
};

// Mixture-of-experts feed-forward layers: Mixtral (top-k of softmax, renormalised) or Qwen2-MoE
// (top-k, renormalised with norm_topk_prob, plus a shared expert behind a sigmoid gate).
struct MoeConfig {
    int64_t experts = 0;         // 0: dense layers
    int64_t expertsPerToken = 0; // num_experts_per_tok
    int64_t expertSize = 0;      // width of each routed expert
    int64_t sharedExpertSize = 0;
    int64_t sparseStep = 1;             // qwen2_moe decoder_sparse_step
    std::vector<int64_t> denseLayers;   // qwen2_moe mlp_only_layers
    bool normalizeTopK = true;          // mixtral always; qwen2_moe norm_topk_prob
    bool fused = false;                 // experts stored as 3-D gate_up_proj / down_proj
    bool sparseAt(int64_t layer) const; // this layer routes to experts
};

struct ModelConfig {
    std::string modelType; // as written in config.json
    ModelFamily family = ModelFamily::Gpt2;
    int64_t vocabSize = 0;
    int64_t hiddenSize = 0;
    int64_t numLayers = 0;
    int64_t numHeads = 0;
    int64_t numKeyValueHeads = 0; // grouped-query attention; equals numHeads for gpt2
    int64_t headDim = 0;
    int64_t intermediateSize = 0;
    int64_t maxPositions = 0;
    double normEps = 1e-5;
    RopeConfig rope;
    std::string activation; // gelu_new, gelu, relu, silu...
    bool tieWordEmbeddings = false;
    bool attentionBias = false; // q/k/v biases
    bool outputBias = false;    // o_proj bias
    bool mlpBias = false;
    std::string torchDtype; // "bfloat16"... ("" when not given)
    std::optional<int64_t> bosTokenId;
    std::vector<int64_t> eosTokenIds;
    // Dropout while training (Transformers' defaults when absent: GPT-2 0.1, the Llama family 0).
    double embeddingDropout = 0.0; // gpt2 embd_pdrop
    double attentionDropout = 0.0; // gpt2 attn_pdrop, llama attention_dropout
    double residualDropout = 0.0;  // gpt2 and phi3 resid_pdrop
    // Sliding-window attention: the window of each layer (a query sees itself and the window - 1
    // positions before it), 0 for full attention. slidingWindow is the window of the sliding layers.
    std::vector<int64_t> layerWindows;
    int64_t slidingWindow = 0;
    // Llama-like variants: Gemma's embeddings times sqrt(hidden_size) and RMSNorm times (1 + weight)
    // in float32; Gemma 2's norms around the attention and the MLP, attention scale
    // query_pre_attn_scalar^-0.5 (0: head_dim^-0.5), tanh soft-capping of attention scores and
    // logits (0: none); Qwen3's RMSNorm of each query and key head; Phi-3's fused q/k/v and gate/up.
    bool scaleEmbeddings = false;
    bool normPlusOne = false;
    bool sandwichNorms = false;
    double attentionScale = 0.0;
    double attentionSoftcap = 0.0;
    double finalLogitSoftcap = 0.0;
    bool qkNorm = false;
    bool fusedQkv = false;
    bool fusedGateUp = false;
    MoeConfig moe;
    // GPT-2's attention scores: times 1/sqrt(head_dim) with scale_attn_weights, times 1/(layer + 1)
    // more with scale_attn_by_inverse_layer_idx, computed in float32 with reorder_and_upcast_attn.
    bool scaleAttentionWeights = true;
    bool scaleAttentionByInverseLayer = false;
    bool upcastAttentionScores = false;
    // quantization_config as JSON text ("" when absent): the checkpoint's weights are stored quantized
    // (quantization.h).
    std::string quantizationConfig;
    // Keys read without effect on the computation (transformers ignores them too), for display.
    std::vector<std::string> warnings;
    // Training-only settings the causal_lm recipe does not implement ("router_jitter_noise 0.1 (...)"),
    // key first; meaningless for inference.
    std::vector<std::string> trainingUnimplemented;
};

// `path` names the file in errors.
Result<ModelConfig> parseModelConfig(const std::string &jsonText, const std::string &path);
// <modelDir>/config.json
Result<ModelConfig> loadModelConfig(const std::string &modelDir);

} // namespace accel::inference
