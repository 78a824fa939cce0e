#include "core/bigmodel/modelfamilies.h"

#include "core/common/fileutil.h"

#include <nlohmann/json.hpp>

namespace accel::bigmodel {

namespace {

using nlohmann::json;

int64_t intOr(const json &j, const char *key, int64_t fallback)
{
    const auto it = j.find(key);
    return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

bool boolOr(const json &j, const char *key, bool fallback)
{
    const auto it = j.find(key);
    return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
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

std::string classPrefix(const std::string &modelType)
{
    if (modelType == "llama")
        return "Llama";
    if (modelType == "mistral")
        return "Mistral";
    if (modelType == "qwen2")
        return "Qwen2";
    if (modelType == "mixtral")
        return "Mixtral";
    return "GPT2";
}

class Builder {
public:
    Builder(ModelStructure &s, DType dtype) : m_s(s), m_dtype(dtype) {}
    void module(const std::string &name, const std::string &cls) { m_s.addModule(name, cls); }
    void param(const std::string &name, std::vector<int64_t> shape)
    {
        m_s.addTensor({name, m_dtype, std::move(shape), 0, false, {}});
    }
    void buffer(const std::string &name, DType dtype, std::vector<int64_t> shape)
    {
        m_s.addTensor({name, dtype, std::move(shape), 0, true, {}});
    }
    void linear(const std::string &name, int64_t in, int64_t out, bool bias)
    {
        module(name, "Linear");
        param(name + ".weight", {out, in});
        if (bias)
            param(name + ".bias", {out});
    }
    void conv1d(const std::string &name, int64_t in, int64_t out) // GPT-2's transposed linear
    {
        module(name, "Conv1D");
        param(name + ".weight", {in, out});
        param(name + ".bias", {out});
    }
    void layerNorm(const std::string &name, int64_t n)
    {
        module(name, "LayerNorm");
        param(name + ".weight", {n});
        param(name + ".bias", {n});
    }
    void rmsNorm(const std::string &name, const std::string &cls, int64_t n)
    {
        module(name, cls);
        param(name + ".weight", {n});
    }
    void embedding(const std::string &name, int64_t count, int64_t dim)
    {
        module(name, "Embedding");
        param(name + ".weight", {count, dim});
    }

private:
    ModelStructure &m_s;
    DType m_dtype;
};

void buildGpt2(const ModelConfig &c, Builder &b)
{
    const int64_t h = c.hiddenSize;
    const int64_t inner = c.intermediateSize;
    b.module("transformer", "GPT2Model");
    b.embedding("transformer.wte", c.vocabSize, h);
    b.embedding("transformer.wpe", c.maxPositions, h);
    b.module("transformer.h", "ModuleList");
    for (int64_t i = 0; i < c.numLayers; ++i) {
        const std::string p = "transformer.h." + std::to_string(i);
        b.module(p, "GPT2Block");
        b.layerNorm(p + ".ln_1", h);
        b.module(p + ".attn", "GPT2Attention");
        b.conv1d(p + ".attn.c_attn", h, 3 * h);
        b.conv1d(p + ".attn.c_proj", h, h);
        b.layerNorm(p + ".ln_2", h);
        b.module(p + ".mlp", "GPT2MLP");
        b.conv1d(p + ".mlp.c_fc", h, inner);
        b.conv1d(p + ".mlp.c_proj", inner, h);
    }
    b.layerNorm("transformer.ln_f", h);
    b.linear("lm_head", h, c.vocabSize, false);
}

void buildLlamaLike(const ModelConfig &c, Builder &b)
{
    const std::string k = classPrefix(c.modelType);
    const int64_t h = c.hiddenSize;
    const int64_t qOut = c.numHeads * c.headDim;
    const int64_t kvOut = c.numKeyValueHeads * c.headDim;
    b.module("model", k + "Model");
    b.embedding("model.embed_tokens", c.vocabSize, h);
    b.module("model.layers", "ModuleList");
    for (int64_t i = 0; i < c.numLayers; ++i) {
        const std::string p = "model.layers." + std::to_string(i);
        b.module(p, k + "DecoderLayer");
        b.module(p + ".self_attn", k + "Attention");
        b.linear(p + ".self_attn.q_proj", h, qOut, c.attentionBias);
        b.linear(p + ".self_attn.k_proj", h, kvOut, c.attentionBias);
        b.linear(p + ".self_attn.v_proj", h, kvOut, c.attentionBias);
        b.linear(p + ".self_attn.o_proj", qOut, h, c.modelType == "llama" && c.attentionBias);
        if (c.modelType == "mixtral") {
            const std::string m = p + ".block_sparse_moe";
            b.module(m, "MixtralSparseMoeBlock");
            b.linear(m + ".gate", h, c.numExperts, false);
            b.module(m + ".experts", "ModuleList");
            for (int64_t e = 0; e < c.numExperts; ++e) {
                const std::string x = m + ".experts." + std::to_string(e);
                b.module(x, "MixtralBlockSparseTop2MLP");
                b.linear(x + ".w1", h, c.intermediateSize, false);
                b.linear(x + ".w2", c.intermediateSize, h, false);
                b.linear(x + ".w3", h, c.intermediateSize, false);
            }
        } else {
            b.module(p + ".mlp", k + "MLP");
            b.linear(p + ".mlp.gate_proj", h, c.intermediateSize, c.mlpBias);
            b.linear(p + ".mlp.up_proj", h, c.intermediateSize, c.mlpBias);
            b.linear(p + ".mlp.down_proj", c.intermediateSize, h, c.mlpBias);
        }
        b.rmsNorm(p + ".input_layernorm", k + "RMSNorm", h);
        b.rmsNorm(p + ".post_attention_layernorm", k + "RMSNorm", h);
    }
    b.rmsNorm("model.norm", k + "RMSNorm", h);
    b.module("model.rotary_emb", k + "RotaryEmbedding");
    b.buffer("model.rotary_emb.inv_freq", DType::F32, {c.headDim / 2});
    b.linear("lm_head", h, c.vocabSize, false);
}

} // namespace

std::vector<std::string> supportedFamilies()
{
    return {"gpt2", "llama", "mistral", "qwen2", "mixtral"};
}

std::string noSplitClassFor(const std::string &modelType)
{
    if (modelType == "gpt2")
        return "GPT2Block";
    for (const std::string &f : supportedFamilies()) {
        if (f == modelType)
            return classPrefix(modelType) + "DecoderLayer";
    }
    return {};
}

Result<ModelConfig> parseModelConfig(const std::string &text, const std::string &path)
{
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception &e) {
        return makeError(ErrorCode::InvalidInput, std::string("not valid JSON: ") + e.what(), path);
    }
    if (!j.is_object())
        return makeError(ErrorCode::InvalidInput, "config.json is not a JSON object", path);
    ModelConfig c;
    c.path = path;
    c.modelType = j.value("model_type", std::string());
    if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
        j["architectures"][0].is_string())
        c.architecture = j["architectures"][0].get<std::string>();
    if (j.contains("torch_dtype") && j["torch_dtype"].is_string())
        c.torchDtype = dtypeFromTorchName(j["torch_dtype"].get<std::string>());
    else if (j.contains("dtype") && j["dtype"].is_string())
        c.torchDtype = dtypeFromTorchName(j["dtype"].get<std::string>());

    if (c.modelType == "gpt2") {
        c.vocabSize = intOr(j, "vocab_size", 50257);
        c.maxPositions = intOr(j, "n_positions", 1024);
        c.hiddenSize = intOr(j, "n_embd", 768);
        c.numLayers = intOr(j, "n_layer", 12);
        c.numHeads = intOr(j, "n_head", 12);
        c.intermediateSize = intOr(j, "n_inner", 4 * c.hiddenSize);
        c.numKeyValueHeads = c.numHeads;
        c.tieWordEmbeddings = boolOr(j, "tie_word_embeddings", true);
        if (c.architecture.empty())
            c.architecture = "GPT2LMHeadModel";
    } else if (c.modelType == "llama" || c.modelType == "mistral" || c.modelType == "qwen2" ||
               c.modelType == "mixtral") {
        const bool qwen = c.modelType == "qwen2";
        const bool llama = c.modelType == "llama";
        c.vocabSize = intOr(j, "vocab_size", qwen ? 151936 : 32000);
        c.hiddenSize = intOr(j, "hidden_size", 4096);
        c.intermediateSize = intOr(j, "intermediate_size", llama ? 11008 : qwen ? 22016 : 14336);
        c.numLayers = intOr(j, "num_hidden_layers", 32);
        c.numHeads = intOr(j, "num_attention_heads", 32);
        c.numKeyValueHeads = intOr(j, "num_key_value_heads", llama || qwen ? c.numHeads : 8);
        c.maxPositions = intOr(j, "max_position_embeddings", llama ? 2048 : qwen ? 32768 : 4096 * 32);
        c.tieWordEmbeddings = boolOr(j, "tie_word_embeddings", false);
        c.attentionBias = qwen ? true : boolOr(j, "attention_bias", false);
        c.mlpBias = llama && boolOr(j, "mlp_bias", false);
        c.numExperts = c.modelType == "mixtral" ? intOr(j, "num_local_experts", 8) : 0;
        c.expertsPerToken = c.modelType == "mixtral" ? intOr(j, "num_experts_per_tok", 2) : 0;
        if (c.architecture.empty())
            c.architecture = classPrefix(c.modelType) + "ForCausalLM";
    } else {
        std::string list;
        for (const std::string &f : supportedFamilies())
            list += (list.empty() ? "" : ", ") + f;
        return makeError(ErrorCode::Unsupported,
                         "model_type \"" + c.modelType + "\" cannot be planned from its config alone (supported: " +
                             list + "); point at a checkpoint instead",
                         path);
    }
    if (c.numHeads <= 0 || c.hiddenSize <= 0 || c.numLayers < 0 || c.vocabSize <= 0 || c.numKeyValueHeads <= 0)
        return makeError(ErrorCode::InvalidInput, "hidden size, heads, layers and vocabulary must be positive", path);
    c.headDim = intOr(j, "head_dim", c.hiddenSize / c.numHeads);
    if (c.headDim <= 0)
        c.headDim = c.hiddenSize / c.numHeads;
    return c;
}

Result<ModelConfig> readModelConfig(const std::string &path)
{
    auto text = fileutil::readFile(path);
    if (!text)
        return tl::unexpected(text.error());
    return parseModelConfig(*text, path);
}

ModelStructure buildModelStructure(const ModelConfig &config, std::optional<DType> dtype)
{
    ModelStructure s;
    s.family = config.modelType;
    s.architecture = config.architecture;
    s.noSplitClasses = {noSplitClassFor(config.modelType)};
    s.addModule("", config.architecture);
    Builder b(s, dtype.value_or(config.torchDtype.value_or(DType::F32)));
    if (config.modelType == "gpt2")
        buildGpt2(config, b);
    else
        buildLlamaLike(config, b);
    if (config.tieWordEmbeddings)
        s.tie("lm_head.weight", config.modelType == "gpt2" ? "transformer.wte.weight" : "model.embed_tokens.weight");
    return s;
}

} // namespace accel::bigmodel
