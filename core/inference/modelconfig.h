// The parts of a Hugging Face config.json that the C++ model families need, selected by
// model_type: "gpt2" or the Llama family ("llama", "mistral", "qwen2").
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::inference {

enum class ModelFamily { Gpt2, Llama };

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
    double ropeTheta = 10000.0;
    std::string activation; // gelu_new, gelu, relu, silu...
    bool tieWordEmbeddings = false;
    bool attentionBias = false; // q/k/v biases (always on for qwen2)
    bool mlpBias = false;
    std::string torchDtype; // "bfloat16"... ("" when not given)
    std::optional<int64_t> bosTokenId;
    std::vector<int64_t> eosTokenIds;
    // Dropout while training (Transformers' defaults when absent: GPT-2 0.1, the Llama family 0).
    double embeddingDropout = 0.0; // gpt2 embd_pdrop
    double attentionDropout = 0.0; // gpt2 attn_pdrop, llama attention_dropout
    double residualDropout = 0.0;  // gpt2 resid_pdrop
    int64_t slidingWindow = 0;     // mistral / qwen2 sliding_window when it applies; 0 = none
    // GPT-2's attention scores: times 1/sqrt(head_dim) with scale_attn_weights, times 1/(layer + 1)
    // more with scale_attn_by_inverse_layer_idx, computed in float32 with reorder_and_upcast_attn.
    bool scaleAttentionWeights = true;
    bool scaleAttentionByInverseLayer = false;
    bool upcastAttentionScores = false;
    std::vector<std::string> warnings; // settings read but not implemented (rope_scaling...)
    // The config key of each warning, in the same order ("rope_scaling", "sliding_window", ...).
    std::vector<std::string> unimplemented;
};

std::vector<std::string> supportedModelTypes();

// `path` names the file in errors.
Result<ModelConfig> parseModelConfig(const std::string &jsonText, const std::string &path);
// <modelDir>/config.json
Result<ModelConfig> loadModelConfig(const std::string &modelDir);

} // namespace accel::inference
