#include "core/inference/modelconfig.h"

#include "core/bigmodel/modelfamilies.h"
#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"
#include "core/inference/configkeys.h"

namespace accel::inference {

namespace {

using nlohmann::json;

// The largest value each size key may have before a model is built from it (the planner's ranges).
int64_t maximumFor(const std::string &key)
{
    const bigmodel::ModelLimits &limits = bigmodel::modelLimits();
    if (key == "n_layer" || key == "num_hidden_layers")
        return limits.layers;
    if (key == "vocab_size")
        return limits.vocabulary;
    if (key == "n_positions" || key == "max_position_embeddings")
        return limits.positions;
    if (key == "n_head" || key == "num_attention_heads" || key == "num_key_value_heads")
        return limits.heads;
    return limits.width;
}

Result<int64_t> intKey(const json &j, const std::string &key, const std::string &path,
                       std::optional<int64_t> fallback = {})
{
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
        if (fallback)
            return *fallback;
        return makeError(ErrorCode::InvalidInput, key + ": missing (a positive integer is required)", path);
    }
    const int64_t maximum = maximumFor(key);
    if (!it->is_number_integer() || it->get<int64_t>() <= 0 || it->get<int64_t>() > maximum ||
        (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(maximum)))
        return makeError(ErrorCode::InvalidInput,
                         key + ": expected a positive integer up to " + std::to_string(maximum) + "; got " +
                             jsonutil::jsonExcerpt(*it),
                         path);
    return it->get<int64_t>();
}

double numberKey(const json &j, const std::string &key, double fallback)
{
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

bool boolKey(const json &j, const std::string &key, bool fallback)
{
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string stringKey(const json &j, const std::string &key, const std::string &fallback)
{
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

void note(ModelConfig &c, const std::string &key, const std::string &text)
{
    c.unimplemented.push_back(key);
    c.warnings.push_back(text);
}

#define ACCEL_TRY_INT(var, ...)                                                                                        \
    auto var##Result = intKey(__VA_ARGS__);                                                                            \
    if (!var##Result)                                                                                                  \
        return tl::unexpected(var##Result.error());                                                                    \
    const int64_t var = *var##Result

Result<ModelConfig> parseGpt2(const json &j, ModelConfig c, const std::string &path)
{
    ACCEL_TRY_INT(vocab, j, "vocab_size", path, 50257);
    ACCEL_TRY_INT(positions, j, "n_positions", path, 1024);
    ACCEL_TRY_INT(embd, j, "n_embd", path, 768);
    ACCEL_TRY_INT(layers, j, "n_layer", path, 12);
    ACCEL_TRY_INT(heads, j, "n_head", path, 12);
    ACCEL_TRY_INT(inner, j, "n_inner", path, 4 * embd);
    if (embd % heads != 0)
        return makeError(ErrorCode::InvalidInput,
                         "n_embd " + std::to_string(embd) + " is not a multiple of n_head " + std::to_string(heads),
                         path);
    c.family = ModelFamily::Gpt2;
    c.vocabSize = vocab;
    c.maxPositions = positions;
    c.hiddenSize = embd;
    c.numLayers = layers;
    c.numHeads = heads;
    c.numKeyValueHeads = heads;
    c.headDim = embd / heads;
    c.intermediateSize = inner;
    c.normEps = numberKey(j, "layer_norm_epsilon", 1e-5);
    c.activation = stringKey(j, "activation_function", "gelu_new");
    c.tieWordEmbeddings = boolKey(j, "tie_word_embeddings", true);
    c.attentionBias = true;
    c.mlpBias = true;
    c.embeddingDropout = numberKey(j, "embd_pdrop", 0.1);
    c.attentionDropout = numberKey(j, "attn_pdrop", 0.1);
    c.residualDropout = numberKey(j, "resid_pdrop", 0.1);
    c.scaleAttentionWeights = boolKey(j, "scale_attn_weights", true);
    c.scaleAttentionByInverseLayer = boolKey(j, "scale_attn_by_inverse_layer_idx", false);
    c.upcastAttentionScores = boolKey(j, "reorder_and_upcast_attn", false);
    return c;
}

Result<ModelConfig> parseLlama(const json &j, ModelConfig c, const std::string &path)
{
    ACCEL_TRY_INT(vocab, j, "vocab_size", path);
    ACCEL_TRY_INT(hidden, j, "hidden_size", path);
    ACCEL_TRY_INT(inter, j, "intermediate_size", path);
    ACCEL_TRY_INT(layers, j, "num_hidden_layers", path);
    ACCEL_TRY_INT(heads, j, "num_attention_heads", path);
    ACCEL_TRY_INT(kvHeads, j, "num_key_value_heads", path, heads);
    ACCEL_TRY_INT(positions, j, "max_position_embeddings", path, 4096);
    if (hidden % heads != 0 && !j.contains("head_dim"))
        return makeError(ErrorCode::InvalidInput,
                         "hidden_size " + std::to_string(hidden) + " is not a multiple of num_attention_heads " +
                             std::to_string(heads),
                         path);
    ACCEL_TRY_INT(headDim, j, "head_dim", path, hidden / heads);
    if (heads % kvHeads != 0)
        return makeError(ErrorCode::InvalidInput,
                         "num_attention_heads " + std::to_string(heads) + " is not a multiple of num_key_value_heads " +
                             std::to_string(kvHeads),
                         path);
    c.family = ModelFamily::Llama;
    c.vocabSize = vocab;
    c.hiddenSize = hidden;
    c.intermediateSize = inter;
    c.numLayers = layers;
    c.numHeads = heads;
    c.numKeyValueHeads = kvHeads;
    c.headDim = headDim;
    c.maxPositions = positions;
    c.normEps = numberKey(j, "rms_norm_eps", 1e-6);
    // Transformers 5 saves RoPE settings as "rope_parameters": {"rope_theta", "rope_type", ...};
    // earlier versions as top-level rope_theta and rope_scaling.
    c.ropeTheta = numberKey(j, "rope_theta", 10000.0);
    if (auto it = j.find("rope_parameters"); it != j.end() && it->is_object()) {
        c.ropeTheta = numberKey(*it, "rope_theta", c.ropeTheta);
        if (const std::string type = stringKey(*it, "rope_type", "default"); type != "default")
            note(c, "rope_parameters",
                 "rope_parameters " + jsonutil::jsonExcerpt(*it) + " is not implemented; plain RoPE is used");
    }
    c.activation = stringKey(j, "hidden_act", "silu");
    c.tieWordEmbeddings = boolKey(j, "tie_word_embeddings", false);
    c.attentionBias = c.modelType == "qwen2" ? true : boolKey(j, "attention_bias", false);
    c.mlpBias = boolKey(j, "mlp_bias", false);
    c.attentionDropout = numberKey(j, "attention_dropout", 0.0);
    if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null())
        note(c, "rope_scaling",
             "rope_scaling " + jsonutil::jsonExcerpt(*it) + " is not implemented; plain RoPE is used");
    if (auto it = j.find("sliding_window");
        it != j.end() && it->is_number_integer() && boolKey(j, "use_sliding_window", c.modelType == "mistral")) {
        c.slidingWindow = it->get<int64_t>();
        note(c, "sliding_window", "sliding_window is not implemented; attention spans the whole context");
    }
    return c;
}

} // namespace

std::vector<std::string> supportedModelTypes()
{
    return {"gpt2", "llama", "mistral", "qwen2"};
}

Result<ModelConfig> parseModelConfig(const std::string &jsonText, const std::string &path)
{
    jsonutil::JsonLimits limits;
    limits.maxBytes = bigmodel::kMaxModelConfigBytes;
    auto document = jsonutil::parseJson(jsonText, path, limits);
    if (!document)
        return tl::unexpected(document.error());
    const json &j = *document;
    if (!j.is_object())
        return makeError(ErrorCode::InvalidInput, "expected a JSON object", path);
    ModelConfig c;
    c.modelType = stringKey(j, "model_type", "");
    c.torchDtype = stringKey(j, "torch_dtype", stringKey(j, "dtype", ""));
    if (auto it = j.find("bos_token_id"); it != j.end() && it->is_number_integer())
        c.bosTokenId = it->get<int64_t>();
    if (auto it = j.find("eos_token_id"); it != j.end()) {
        if (it->is_number_integer())
            c.eosTokenIds.push_back(it->get<int64_t>());
        else if (it->is_array())
            for (const auto &v : *it)
                if (v.is_number_integer())
                    c.eosTokenIds.push_back(v.get<int64_t>());
    }
    Result<ModelConfig> parsed = makeError(ErrorCode::Internal, "unset");
    try {
        if (c.modelType == "gpt2")
            parsed = parseGpt2(j, c, path);
        else if (c.modelType == "llama" || c.modelType == "mistral" || c.modelType == "qwen2")
            parsed = parseLlama(j, c, path);
        else
            return makeError(ErrorCode::Unsupported,
                             "model_type: '" + c.modelType +
                                 "' has no C++ implementation (supported: gpt2, llama, mistral, qwen2)",
                             path);
    } catch (const json::exception &e) {
        return makeError(ErrorCode::InvalidInput, e.what(), path);
    }
    if (!parsed)
        return parsed;
    if (auto known = checkConfigKeys(j, c.modelType, path); !known)
        return tl::unexpected(known.error());
    const std::string &act = parsed->activation;
    if (act != "gelu_new" && act != "gelu_pytorch_tanh" && act != "gelu_fast" && act != "gelu" && act != "relu" &&
        act != "silu" && act != "swish")
        return makeError(
            ErrorCode::Unsupported,
            "activation '" + act +
                "' is not implemented (supported: gelu_new, gelu_pytorch_tanh, gelu_fast, gelu, relu, silu)",
            path);
    return parsed;
}

Result<ModelConfig> loadModelConfig(const std::string &modelDir)
{
    const std::string path = modelDir + "/config.json";
    auto text = fileutil::readFile(path, bigmodel::kMaxModelConfigBytes);
    if (!text)
        return tl::unexpected(text.error());
    return parseModelConfig(*text, path);
}

} // namespace accel::inference
