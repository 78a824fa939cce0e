#include "core/bigmodel/modelfamilies.h"

#include "core/bigmodel/familytrees.h"
#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"

#include <algorithm>

namespace accel::bigmodel {

namespace {

using nlohmann::json;

bool boolOr(const json &j, const char *key, bool fallback)
{
    const auto it = j.find(key);
    return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string stringOr(const json &j, const char *key, const char *fallback)
{
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
}

// rope_parameters.partial_rotary_factor (transformers 5), else the top-level key, else 1.
double partialRotaryFactor(const json &j)
{
    if (const auto rope = j.find("rope_parameters"); rope != j.end() && rope->is_object()) {
        if (const auto f = rope->find("partial_rotary_factor"); f != rope->end() && f->is_number())
            return f->get<double>();
    }
    const auto f = j.find("partial_rotary_factor");
    return f != j.end() && f->is_number() ? f->get<double>() : 1.0;
}

// transformers' defaults of each Llama-like family's config class.
struct FamilyDefaults {
    const char *type;
    int64_t vocab, hidden, intermediate, layers, heads;
    int64_t keyValueHeads; // 0: as many as the query heads
    int64_t headDim;       // 0: hidden / heads
    int64_t positions;
    bool tied;
    const char *activationKey;
    const char *activation;
};

const FamilyDefaults *familyDefaults(const std::string &type)
{
    static const FamilyDefaults defaults[] = {
        {"llama", 32000, 4096, 11008, 32, 32, 0, 0, 2048, false, "hidden_act", "silu"},
        {"mistral", 32000, 4096, 14336, 32, 32, 8, 0, 4096 * 32, false, "hidden_act", "silu"},
        {"qwen2", 151936, 4096, 22016, 32, 32, 32, 0, 32768, false, "hidden_act", "silu"},
        {"mixtral", 32000, 4096, 14336, 32, 32, 8, 0, 4096 * 32, false, "hidden_act", "silu"},
        {"gemma", 256000, 3072, 24576, 28, 16, 16, 256, 8192, true, "hidden_act", "gelu_pytorch_tanh"},
        {"gemma2", 256000, 2304, 9216, 26, 8, 4, 256, 8192, true, "hidden_activation", "gelu_pytorch_tanh"},
        {"qwen2_moe", 151936, 2048, 5632, 24, 16, 16, 0, 32768, false, "hidden_act", "silu"},
        {"qwen3", 151936, 4096, 22016, 32, 32, 32, 128, 32768, false, "hidden_act", "silu"},
        {"phi3", 32064, 3072, 8192, 32, 32, 0, 0, 4096, false, "hidden_act", "silu"},
    };
    for (const FamilyDefaults &d : defaults) {
        if (type == d.type)
            return &d;
    }
    return nullptr;
}

std::optional<DType> dtypeFromTorchName(const std::string &name)
{
    if (name == "float32")
        return DType::F32;
    if (name == "float16")
        return DType::F16;
    if (name == "bfloat16")
        return DType::BF16;
    if (name == "float64")
        return DType::F64;
    return std::nullopt;
}

} // namespace

std::vector<std::string> supportedFamilies()
{
    return {"gpt2", "llama", "mistral", "qwen2", "mixtral", "gemma", "gemma2", "qwen2_moe", "qwen3", "phi3"};
}

std::string layerCountKey(const std::string &modelType)
{
    return modelType == "gpt2" ? "n_layer" : "num_hidden_layers";
}

std::string embeddingModuleName(const std::string &modelType)
{
    return modelType == "gpt2" ? "transformer.wte" : "model.embed_tokens";
}

std::string baseModelName(const std::string &modelType)
{
    if (modelType == "gpt2")
        return "transformer";
    for (const std::string &f : supportedFamilies()) {
        if (f == modelType)
            return "model";
    }
    return {};
}

std::string noSplitClassFor(const std::string &modelType)
{
    if (modelType == "gpt2")
        return "GPT2Block";
    for (const std::string &f : supportedFamilies()) {
        if (f == modelType)
            return familyClassPrefix(modelType) + "DecoderLayer";
    }
    return {};
}

namespace {

// Reads the integer sizes of a config.json, each checked against a sane range before anything is
// built from it (a declared layer costs about 7 KB of structure; 2^31 of them would abort).
class SizeReader {
public:
    SizeReader(const json &j, const std::string &path) : m_j(j), m_path(path) {}

    // The key's value, `fallback` when absent or null; an error is kept (the first one) when the
    // value is not an integer within [min, max].
    int64_t get(const char *key, int64_t fallback, int64_t min, int64_t max)
    {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null())
            return fallback;
        const std::string range = "expected an integer from " + std::to_string(min) + " to " + std::to_string(max);
        if (!it->is_number_integer() ||
            (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
            fail(std::string(key) + ": " + range + ", got " + jsonutil::jsonExcerpt(*it));
            return fallback;
        }
        const int64_t value = it->get<int64_t>();
        if (value < min || value > max) {
            fail(std::string(key) + ": " + std::to_string(value) + " is out of range (" + range + ")");
            return fallback;
        }
        return value;
    }
    void fail(const std::string &message)
    {
        if (m_error.empty())
            m_error = message;
    }
    Result<void> result() const
    {
        if (m_error.empty())
            return {};
        return makeError(ErrorCode::InvalidInput, m_error, m_path);
    }

private:
    const json &m_j;
    const std::string &m_path;
    std::string m_error;
};

} // namespace

Result<ModelConfig> parseModelConfig(const std::string &text, const std::string &path)
{
    jsonutil::JsonLimits limits;
    limits.maxBytes = kMaxModelConfigBytes;
    auto parsed = jsonutil::parseJson(text, path, limits);
    if (!parsed)
        return tl::unexpected(parsed.error());
    const json &j = *parsed;
    if (!j.is_object())
        return makeError(ErrorCode::InvalidInput, "config.json is not a JSON object", path);
    ModelConfig c;
    c.path = path;
    if (const auto type = j.find("model_type"); type != j.end() && type->is_string())
        c.modelType = type->get<std::string>();
    else if (type != j.end())
        return makeError(ErrorCode::InvalidInput, "model_type: expected a string, got " + jsonutil::jsonExcerpt(*type),
                         path);
    if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
        j["architectures"][0].is_string())
        c.architecture = j["architectures"][0].get<std::string>();
    if (const auto eos = j.find("eos_token_id"); eos != j.end() && eos->is_number_integer()) {
        c.eosTokenIds.push_back(eos->get<int64_t>());
    } else if (eos != j.end() && eos->is_array()) {
        for (const json &id : *eos)
            if (id.is_number_integer())
                c.eosTokenIds.push_back(id.get<int64_t>());
    }
    if (j.contains("torch_dtype") && j["torch_dtype"].is_string())
        c.torchDtype = dtypeFromTorchName(j["torch_dtype"].get<std::string>());
    else if (j.contains("dtype") && j["dtype"].is_string())
        c.torchDtype = dtypeFromTorchName(j["dtype"].get<std::string>());

    SizeReader size(j, path);
    const ModelLimits &m = modelLimits();
    if (c.modelType == "gpt2") {
        c.vocabSize = size.get("vocab_size", 50257, 1, m.vocabulary);
        c.maxPositions = size.get("n_positions", 1024, 0, m.positions);
        c.hiddenSize = size.get("n_embd", 768, 1, m.width);
        c.numLayers = size.get("n_layer", 12, 0, m.layers);
        c.numHeads = size.get("n_head", 12, 1, m.heads);
        c.intermediateSize = size.get("n_inner", 4 * c.hiddenSize, 1, m.width);
        c.numKeyValueHeads = c.numHeads;
        c.tieWordEmbeddings = boolOr(j, "tie_word_embeddings", true);
        c.activation = stringOr(j, "activation_function", "gelu_new");
        c.headDim = c.hiddenSize / std::max<int64_t>(c.numHeads, 1);
        if (c.architecture.empty())
            c.architecture = "GPT2LMHeadModel";
    } else if (const FamilyDefaults *d = familyDefaults(c.modelType)) {
        c.vocabSize = size.get("vocab_size", d->vocab, 1, m.vocabulary);
        c.hiddenSize = size.get("hidden_size", d->hidden, 1, m.width);
        c.intermediateSize = size.get("intermediate_size", d->intermediate, 1, m.width);
        c.numLayers = size.get("num_hidden_layers", d->layers, 0, m.layers);
        c.numHeads = size.get("num_attention_heads", d->heads, 1, m.heads);
        // transformers' defaults when the key is absent; null means as many as the query heads.
        const auto kv = j.find("num_key_value_heads");
        const bool kvNull = kv != j.end() && kv->is_null();
        c.numKeyValueHeads = size.get("num_key_value_heads",
                                      d->keyValueHeads > 0 && !kvNull ? d->keyValueHeads : c.numHeads, 1, m.heads);
        c.maxPositions = size.get("max_position_embeddings", d->positions, 0, m.positions);
        c.tieWordEmbeddings = boolOr(j, "tie_word_embeddings", d->tied);
        c.activation = stringOr(j, d->activationKey, d->activation);
        if (c.modelType == "gemma" && c.activation == "gelu") // transformers reads Gemma's legacy "gelu" as tanh
            c.activation = "gelu_pytorch_tanh";
        const bool attentionBias = boolOr(j, "attention_bias", false);
        c.attentionBias = c.modelType == "qwen2"       ? true
                          : c.modelType == "qwen2_moe" ? boolOr(j, "qkv_bias", true)
                          : c.modelType == "mistral" || c.modelType == "mixtral" || c.modelType == "phi3"
                              ? false
                              : attentionBias;
        c.outputBias =
            (c.modelType == "llama" || c.modelType == "gemma" || c.modelType == "gemma2" || c.modelType == "qwen3") &&
            attentionBias;
        c.mlpBias = c.modelType == "llama" && boolOr(j, "mlp_bias", false);
        if (c.modelType == "mixtral") {
            c.numExperts = size.get("num_local_experts", 8, 1, m.experts);
            c.expertsPerToken = size.get("num_experts_per_tok", 2, 1, m.experts);
        } else if (c.modelType == "qwen2_moe") {
            c.numExperts = size.get("num_experts", 60, 0, m.experts);
            c.expertsPerToken = size.get("num_experts_per_tok", 4, 1, m.experts);
            c.moeIntermediateSize = size.get("moe_intermediate_size", 1408, 1, m.width);
            c.sharedExpertIntermediateSize = size.get("shared_expert_intermediate_size", 5632, 1, m.width);
            c.decoderSparseStep = size.get("decoder_sparse_step", 1, 1, m.layers);
            if (const auto it = j.find("mlp_only_layers"); it != j.end() && !it->is_null()) {
                if (!it->is_array())
                    size.fail("mlp_only_layers: expected a list of layer indices, got " + jsonutil::jsonExcerpt(*it));
                else
                    for (const json &v : *it) {
                        if (!v.is_number_integer() || v.get<int64_t>() < 0)
                            size.fail("mlp_only_layers: expected layer indices, got " + jsonutil::jsonExcerpt(v));
                        else
                            c.mlpOnlyLayers.push_back(v.get<int64_t>());
                    }
            }
        }
        c.headDim = size.get("head_dim", d->headDim > 0 ? d->headDim : c.hiddenSize / std::max<int64_t>(c.numHeads, 1),
                             1, m.width);
        c.rotaryDim = c.headDim;
        if (c.modelType == "phi3") // the only family here whose default RoPE turns part of each head
            c.rotaryDim = static_cast<int64_t>(static_cast<double>(c.headDim) * partialRotaryFactor(j));
        if (c.architecture.empty())
            c.architecture = familyClassPrefix(c.modelType) + "ForCausalLM";
    } else {
        std::string list;
        for (const std::string &f : supportedFamilies())
            list += (list.empty() ? "" : ", ") + f;
        return makeError(ErrorCode::Unsupported,
                         "model_type \"" + c.modelType + "\" cannot be planned from its config alone (supported: " +
                             list + "); point at a checkpoint instead",
                         path);
    }
    if (auto checked = size.result(); !checked)
        return tl::unexpected(checked.error());
    const int64_t blocks = c.numLayers * std::max<int64_t>(c.numExperts, 1);
    if (blocks > m.layerBlocks)
        return makeError(ErrorCode::InvalidInput,
                         std::to_string(c.numLayers) + " layers of " + std::to_string(c.numExperts) + " experts are " +
                             std::to_string(blocks) + " blocks, more than the " + std::to_string(m.layerBlocks) +
                             " a model structure is built for",
                         path);
    return c;
}

const ModelLimits &modelLimits()
{
    static const ModelLimits limits;
    return limits;
}

Result<ModelConfig> readModelConfig(const std::string &path)
{
    auto text = fileutil::readFile(path, kMaxModelConfigBytes);
    if (!text)
        return tl::unexpected(text.error());
    return parseModelConfig(*text, path);
}

ModelStructure buildModelStructure(const ModelConfig &config, std::optional<DType> dtype, MixtralLayout layout)
{
    ModelStructure s;
    s.family = config.modelType;
    s.architecture = config.architecture;
    s.noSplitClasses = {noSplitClassFor(config.modelType)};
    s.addModule("", config.architecture);
    buildFamilyTree(config, s, dtype.value_or(config.torchDtype.value_or(DType::F32)), layout);
    if (config.tieWordEmbeddings)
        s.tie("lm_head.weight", embeddingModuleName(config.modelType) + ".weight");
    return s;
}

} // namespace accel::bigmodel
