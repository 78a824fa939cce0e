#include "core/inference/modelconfig.h"

#include "core/bigmodel/modelfamilies.h"
#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"
#include "core/inference/configkeys.h"
#include "core/inference/ropeconfig.h"

#include <algorithm>

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
    if (key == "num_local_experts" || key == "num_experts" || key == "num_experts_per_tok")
        return limits.experts;
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

// A positive integer, or 0 when the key is absent, null or 0 (transformers' "no window").
Result<int64_t> windowKey(const json &j, const std::string &key, int64_t fallback, const std::string &path)
{
    auto it = j.find(key);
    if (it == j.end())
        return fallback;
    if (it->is_null())
        return 0;
    const auto value = jsonutil::integerValue(*it, 0);
    if (!value)
        return makeError(ErrorCode::InvalidInput,
                         key + ": expected a non-negative integer or null; got " + jsonutil::jsonExcerpt(*it), path);
    return *value;
}

void note(ModelConfig &c, const std::string &key, const std::string &text)
{
    c.warnings.push_back(key == text.substr(0, key.size()) ? text : key + ": " + text);
}

#define ACCEL_TRY_INT(var, ...)                                                                                        \
    auto var##Result = intKey(__VA_ARGS__);                                                                            \
    if (!var##Result)                                                                                                  \
        return tl::unexpected(var##Result.error());                                                                    \
    const int64_t var = *var##Result

#define ACCEL_TRY(var, expression)                                                                                     \
    auto var##Result = (expression);                                                                                   \
    if (!var##Result)                                                                                                  \
        return tl::unexpected(var##Result.error());                                                                    \
    auto var = *var##Result

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
    c.outputBias = true;
    c.mlpBias = true;
    c.embeddingDropout = numberKey(j, "embd_pdrop", 0.1);
    c.attentionDropout = numberKey(j, "attn_pdrop", 0.1);
    c.residualDropout = numberKey(j, "resid_pdrop", 0.1);
    c.scaleAttentionWeights = boolKey(j, "scale_attn_weights", true);
    c.scaleAttentionByInverseLayer = boolKey(j, "scale_attn_by_inverse_layer_idx", false);
    c.upcastAttentionScores = boolKey(j, "reorder_and_upcast_attn", false);
    c.layerWindows.assign(static_cast<size_t>(layers), 0);
    return c;
}

// Which layers slide and how far (transformers 5's config classes and attention modules).
Result<void> parseWindows(const json &j, ModelConfig &c, const std::string &path)
{
    const std::string &type = c.modelType;
    const size_t layers = static_cast<size_t>(c.numLayers);
    c.layerWindows.assign(layers, 0);
    if (type == "llama" || type == "gemma") {
        if (j.contains("sliding_window") && !j["sliding_window"].is_null())
            note(c, "sliding_window", "sliding_window is not read by model_type " + type + " (nor by transformers)");
        return {};
    }
    // Mistral, Mixtral and Phi-3 slide every layer when sliding_window is set (Mistral ignores
    // layer_types, as transformers' MistralModel does).
    if (type == "mistral" || type == "mixtral" || type == "phi3") {
        ACCEL_TRY(window, windowKey(j, "sliding_window", type == "mistral" ? 4096 : 0, path));
        c.slidingWindow = window;
        c.layerWindows.assign(layers, window);
        if (j.contains("layer_types"))
            note(c, "layer_types",
                 "layer_types is not read by model_type " + type + " (every layer slides when sliding_window is set)");
        return {};
    }
    const bool use = type == "gemma2" || boolKey(j, "use_sliding_window", false);
    ACCEL_TRY(window, windowKey(j, "sliding_window", 4096, path));
    if (!use)
        window = 0; // qwen2 / qwen3 / qwen2_moe without use_sliding_window: no window
    ACCEL_TRY(maxWindowLayers, windowKey(j, "max_window_layers", 28, path));
    std::vector<bool> sliding(layers, false);
    if (auto it = j.find("layer_types"); it != j.end() && !it->is_null()) {
        if (!it->is_array() || it->size() != layers)
            return makeError(ErrorCode::InvalidInput,
                             "layer_types: expected one entry per layer (" + std::to_string(layers) + "); got " +
                                 jsonutil::jsonExcerpt(*it),
                             path);
        for (size_t i = 0; i < layers; ++i)
            sliding[i] = (*it)[i].is_string() && (*it)[i].get<std::string>() == "sliding_attention";
    } else {
        for (size_t i = 0; i < layers; ++i) {
            const auto index = static_cast<int64_t>(i);
            if (type == "gemma2")
                sliding[i] = (index + 1) % 2 != 0;
            else if (type == "qwen2_moe")
                sliding[i] = use && (index + 1) % 2 != 0 && index < maxWindowLayers;
            else
                sliding[i] = window > 0 && index >= maxWindowLayers;
        }
    }
    c.slidingWindow = window;
    for (size_t i = 0; i < layers; ++i)
        c.layerWindows[i] = sliding[i] ? window : 0;
    return {};
}

Result<ModelConfig> parseLlama(const json &j, const std::string &text, ModelConfig c, const std::string &path)
{
    // The family's defaults and derived settings (biases, activation, head_dim, experts) as the
    // device-map planner reads them; this parser's own errors for the sizes come first.
    auto plannedResult = bigmodel::parseModelConfig(text, path);
    const bigmodel::ModelConfig d = plannedResult ? *plannedResult : bigmodel::ModelConfig{};
    auto fallback = [&](int64_t value) { return plannedResult ? std::optional<int64_t>(value) : std::nullopt; };
    ACCEL_TRY_INT(vocab, j, "vocab_size", path, fallback(d.vocabSize));
    ACCEL_TRY_INT(hidden, j, "hidden_size", path, fallback(d.hiddenSize));
    ACCEL_TRY_INT(inter, j, "intermediate_size", path, fallback(d.intermediateSize));
    ACCEL_TRY_INT(layers, j, "num_hidden_layers", path, fallback(d.numLayers));
    ACCEL_TRY_INT(heads, j, "num_attention_heads", path, fallback(d.numHeads));
    ACCEL_TRY_INT(kvHeads, j, "num_key_value_heads", path, fallback(d.numKeyValueHeads));
    ACCEL_TRY_INT(positions, j, "max_position_embeddings", path, fallback(d.maxPositions));
    if (!plannedResult)
        return tl::unexpected(plannedResult.error());
    const std::string &type = c.modelType;
    const bool defaultHeadDim = type == "gemma" || type == "gemma2" || type == "qwen3"; // 256, 256, 128
    if (hidden % heads != 0 && !j.contains("head_dim") && !defaultHeadDim)
        return makeError(ErrorCode::InvalidInput,
                         "hidden_size " + std::to_string(hidden) + " is not a multiple of num_attention_heads " +
                             std::to_string(heads),
                         path);
    ACCEL_TRY_INT(headDim, j, "head_dim", path, d.headDim);
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
    c.normEps = numberKey(j, "rms_norm_eps", type == "phi3" || type == "mixtral" ? 1e-5 : 1e-6);
    c.activation = d.activation;
    c.tieWordEmbeddings = d.tieWordEmbeddings;
    c.attentionBias = d.attentionBias;
    c.outputBias = d.outputBias;
    c.mlpBias = d.mlpBias;
    c.attentionDropout = numberKey(j, "attention_dropout", 0.0);
    if (type == "phi3") {
        c.residualDropout = numberKey(j, "resid_pdrop", 0.0);
        c.fusedQkv = c.fusedGateUp = true;
        if (boolKey(j, "attention_bias", false))
            note(c, "attention_bias", "attention_bias is not read by model_type phi3 (its layers have no biases)");
    }
    if (type == "gemma" || type == "gemma2") {
        c.scaleEmbeddings = c.normPlusOne = true;
        if (boolKey(j, "use_bidirectional_attention", false))
            return makeError(ErrorCode::Unsupported,
                             "use_bidirectional_attention: true is not implemented (attention here is causal)", path);
    }
    if (type == "gemma2") {
        c.sandwichNorms = true;
        c.attentionScale = 1.0 / std::sqrt(numberKey(j, "query_pre_attn_scalar", 256.0));
        c.attentionSoftcap = j.contains("attn_logit_softcapping") ? numberKey(j, "attn_logit_softcapping", 0.0) : 50.0;
        c.finalLogitSoftcap =
            j.contains("final_logit_softcapping") ? numberKey(j, "final_logit_softcapping", 0.0) : 30.0;
    }
    c.qkNorm = type == "qwen3";
    if (type == "mixtral" || type == "qwen2_moe") {
        c.moe.experts = d.numExperts;
        c.moe.expertsPerToken = d.expertsPerToken;
        c.moe.expertSize = type == "mixtral" ? inter : d.moeIntermediateSize;
        c.moe.sharedExpertSize = d.sharedExpertIntermediateSize;
        c.moe.sparseStep = d.decoderSparseStep;
        c.moe.denseLayers = d.mlpOnlyLayers;
        c.moe.normalizeTopK = type == "mixtral" || boolKey(j, "norm_topk_prob", false);
        if (c.moe.expertsPerToken > std::max<int64_t>(c.moe.experts, 1))
            return makeError(ErrorCode::InvalidInput,
                             "num_experts_per_tok " + std::to_string(c.moe.expertsPerToken) + " exceeds the " +
                                 std::to_string(c.moe.experts) + " experts",
                             path);
        if (numberKey(j, "router_jitter_noise", 0.0) != 0.0)
            c.trainingUnimplemented.push_back("router_jitter_noise " + jsonutil::jsonExcerpt(j["router_jitter_noise"]) +
                                              " (noise on the router's input while training)");
        if (boolKey(j, "output_router_logits", false))
            c.trainingUnimplemented.push_back(
                "output_router_logits true (the router's load-balancing loss added to the training loss)");
    }
    // Phi-3 alone turns part of each head (partial_rotary_factor); the planner computes that width.
    const RopeInput ropeInput{type, headDim, type == "phi3" ? d.rotaryDim : headDim, positions};
    std::vector<std::pair<std::string, std::string>> notes;
    ACCEL_TRY(rope, parseRopeConfig(j, ropeInput, path, notes));
    c.rope = std::move(rope);
    for (const auto &[key, text] : notes)
        note(c, key, text);
    if (c.rope.rotaryDim <= 0 || c.rope.rotaryDim % 2 != 0 || c.rope.rotaryDim > headDim)
        return makeError(ErrorCode::InvalidInput,
                         "partial_rotary_factor: " + std::to_string(c.rope.rotaryDim) + " rotary channels of " +
                             std::to_string(headDim) + " (an even number up to head_dim is required)",
                         path);
    if (auto ok = parseWindows(j, c, path); !ok)
        return tl::unexpected(ok.error());
    return c;
}

} // namespace

bool MoeConfig::sparseAt(int64_t layer) const
{
    return experts > 0 && std::find(denseLayers.begin(), denseLayers.end(), layer) == denseLayers.end() &&
           (layer + 1) % std::max<int64_t>(sparseStep, 1) == 0;
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
    const auto types = bigmodel::supportedFamilies(); // the planner's families: every one runs here
    Result<ModelConfig> parsed = makeError(ErrorCode::Internal, "unset");
    try {
        if (c.modelType == "gpt2") {
            parsed = parseGpt2(j, c, path);
        } else if (std::find(types.begin(), types.end(), c.modelType) != types.end()) {
            parsed = parseLlama(j, jsonText, c, path);
        } else {
            std::string list;
            for (const auto &t : types)
                list += (list.empty() ? "" : ", ") + t;
            return makeError(ErrorCode::Unsupported,
                             "model_type: '" + c.modelType + "' has no C++ implementation (supported: " + list + ")",
                             path);
        }
    } catch (const json::exception &e) {
        return makeError(ErrorCode::InvalidInput, e.what(), path);
    }
    if (!parsed)
        return parsed;
    if (auto it = j.find("quantization_config"); it != j.end() && !it->is_null()) {
        parsed->quantizationConfig = it->dump();
        parsed->trainingUnimplemented.push_back("quantization_config " + jsonutil::jsonExcerpt(*it) +
                                                " (training quantized weights)");
    }
    auto keys = checkConfigKeys(j, c.modelType, path);
    if (!keys)
        return tl::unexpected(keys.error());
    for (const auto &[key, text] : *keys)
        note(*parsed, key, text);
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
