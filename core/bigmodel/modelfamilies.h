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
    int64_t numExperts = 0;                   // mixtral: num_local_experts; qwen2_moe: num_experts
    int64_t expertsPerToken = 0;              // num_experts_per_tok
    int64_t moeIntermediateSize = 0;          // qwen2_moe: width of each routed expert
    int64_t sharedExpertIntermediateSize = 0; // qwen2_moe: width of the shared expert
    int64_t decoderSparseStep = 1;            // qwen2_moe: every Nth layer routes to experts
    std::vector<int64_t> mlpOnlyLayers;       // qwen2_moe: layers that keep a dense MLP
    int64_t rotaryDim = 0;                    // channels RoPE turns: head_dim x partial_rotary_factor
    std::string activation;                   // hidden_act / activation_function as transformers reads it
    bool tieWordEmbeddings = false;
    bool attentionBias = false; // bias on q/k/v (qwen2 always, qwen2_moe qkv_bias, others attention_bias)
    bool outputBias = false;    // bias on o_proj (llama, gemma, gemma2, qwen3 with attention_bias)
    bool mlpBias = false;
    std::vector<int64_t> eosTokenIds; // eos_token_id: one id or a list
};

// The model_types the planner and the inference engine (inference::parseModelConfig) both implement:
// gpt2, llama, mistral, qwen2, mixtral, gemma, gemma2, qwen2_moe, qwen3, phi3
std::vector<std::string> supportedFamilies();

// The config.json key that holds a family's number of decoder blocks: "n_layer" for gpt2, else
// "num_hidden_layers".
std::string layerCountKey(const std::string &modelType);

// The token embedding's module, whose weight a tied head shares: "transformer.wte" for gpt2, else
// "model.embed_tokens".
std::string embeddingModuleName(const std::string &modelType);

// config.json is a few kilobytes; anything past this is not one.
constexpr uint64_t kMaxModelConfigBytes = 16u << 20;

// The ranges config.json sizes must fall in before a structure is built from them: far beyond any
// published model, small enough that the structure (about 7 KB per layer) fits in memory.
struct ModelLimits {
    int64_t layers = 4096;
    int64_t width = int64_t(1) << 20; // hidden, intermediate, head_dim
    int64_t heads = int64_t(1) << 16;
    int64_t vocabulary = int64_t(1) << 24;
    int64_t positions = int64_t(1) << 30;
    int64_t experts = 4096;
    int64_t layerBlocks = int64_t(1) << 17; // layers x experts
};
const ModelLimits &modelLimits();

// Parses config.json text (defaults of each family filled in). Unknown model types are an
// error naming the supported ones; a size that is not an integer within modelLimits() is an
// error naming the key.
Result<ModelConfig> parseModelConfig(const std::string &jsonText, const std::string &path);
Result<ModelConfig> readModelConfig(const std::string &path);

// The no-split block class of a family ("LlamaDecoderLayer").
std::string noSplitClassFor(const std::string &modelType);

// How a Mixtral layer holds its experts: transformers 5 builds one MixtralExperts module with
// 3-D gate_up_proj / down_proj tensors under "mlp"; checkpoints on the Hub (and transformers 4)
// name one module per expert under "block_sparse_moe.experts.N" (w1, w2, w3).
enum class MixtralLayout { Fused, PerExpert };

// The full module tree of the family's causal-LM model as transformers builds it from the config
// (parameter-less modules such as dropouts and activations included); tensors get `dtype` (the
// config's torch_dtype when not given, float32 when neither).
ModelStructure buildModelStructure(const ModelConfig &config, std::optional<DType> dtype = std::nullopt,
                                   MixtralLayout layout = MixtralLayout::Fused);

// The base model under the causal-LM head ("transformer" for gpt2, "model" otherwise), or ""
// when the family is unknown.
std::string baseModelName(const std::string &modelType);

} // namespace accel::bigmodel
