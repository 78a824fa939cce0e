// Hugging Face model families known without their weights: config.json is read into a
// ModelConfig and the module tree is computed analytically (so a 70B model is planned from its
// config alone), with the family's class names, no-split block class and tied embeddings.
// Checkpoint headers refine that tree (modelloader.h).
#pragma once

#include "core/bigmodel/modelstructure.h"
#include "core/common/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::bigmodel {

struct ModelConfig {
    std::string path;         // the config.json read, for messages
    std::string modelType;    // "llama", "gpt2", ...
    std::string architecture; // first of "architectures"
    std::optional<DType> torchDtype;
    int64_t vocabSize = 0;
    int64_t hiddenSize = 0;
    int64_t intermediateSize = 0;
    int64_t numLayers = 0;
    int64_t numHeads = 0;
    int64_t numKeyValueHeads = 0;
    int64_t headDim = 0;
    int64_t maxPositions = 0;
    int64_t numExperts = 0;      // mixtral: num_local_experts
    int64_t expertsPerToken = 0; // mixtral: num_experts_per_tok
    bool tieWordEmbeddings = false;
    bool attentionBias = false; // bias on q/k/v (qwen2 always, llama when attention_bias)
    bool mlpBias = false;
};

std::vector<std::string> supportedFamilies(); // gpt2, llama, mistral, qwen2, mixtral

// Parses config.json text (defaults of each family filled in). Unknown model types are an
// error naming the supported ones.
Result<ModelConfig> parseModelConfig(const std::string &jsonText, const std::string &path);
Result<ModelConfig> readModelConfig(const std::string &path);

// The no-split block class of a family ("LlamaDecoderLayer").
std::string noSplitClassFor(const std::string &modelType);

// The full module tree of the family's causal-LM model; tensors get `dtype` (the config's
// torch_dtype when not given, float32 when neither).
ModelStructure buildModelStructure(const ModelConfig &config, std::optional<DType> dtype = std::nullopt);

} // namespace accel::bigmodel
