#include "core/bigmodel/modelfamilies.h"

#include "core/common/fileutil.h"

#include "core/common/jsondocument.h"

namespace accel::bigmodel {

namespace {

using nlohmann::json;

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
    // A module without parameters or buffers (dropout, activation): it has no size, but it is a
    // child like any other, so a split parent's work list and the device map name it.
    void plain(const std::string &name, const std::string &cls) { m_s.addModule(name, cls); }
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
    b.plain("transformer.drop", "Dropout");
    b.module("transformer.h", "ModuleList");
    for (int64_t i = 0; i < c.numLayers; ++i) {
        const std::string p = "transformer.h." + std::to_string(i);
        b.module(p, "GPT2Block");
        b.layerNorm(p + ".ln_1", h);
        b.module(p + ".attn", "GPT2Attention");
        b.conv1d(p + ".attn.c_attn", h, 3 * h);
        b.conv1d(p + ".attn.c_proj", h, h);
        b.plain(p + ".attn.attn_dropout", "Dropout");
        b.plain(p + ".attn.resid_dropout", "Dropout");
        b.layerNorm(p + ".ln_2", h);
        b.module(p + ".mlp", "GPT2MLP");
        b.conv1d(p + ".mlp.c_fc", h, inner);
        b.conv1d(p + ".mlp.c_proj", inner, h);
        b.plain(p + ".mlp.act", "NewGELUActivation");
        b.plain(p + ".mlp.dropout", "Dropout");
    }
    b.layerNorm("transformer.ln_f", h);
    b.linear("lm_head", h, c.vocabSize, false);
}

void buildLlamaLike(const ModelConfig &c, Builder &b, MixtralLayout layout)
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
        if (c.modelType == "mixtral" && layout == MixtralLayout::PerExpert) {
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
                b.plain(x + ".act_fn", "SiLUActivation");
            }
        } else if (c.modelType == "mixtral") {
            // transformers 5: the router and one module holding every expert's weights as 3-D tensors.
            const std::string m = p + ".mlp";
            b.module(m, "MixtralSparseMoeBlock");
            b.module(m + ".gate", "MixtralTopKRouter");
            b.param(m + ".gate.weight", {c.numExperts, h});
            b.module(m + ".experts", "MixtralExperts");
            b.param(m + ".experts.gate_up_proj", {c.numExperts, 2 * c.intermediateSize, h});
            b.param(m + ".experts.down_proj", {c.numExperts, h, c.intermediateSize});
            b.plain(m + ".experts.act_fn", "SiLUActivation");
        } else {
            b.module(p + ".mlp", k + "MLP");
            b.linear(p + ".mlp.gate_proj", h, c.intermediateSize, c.mlpBias);
            b.linear(p + ".mlp.up_proj", h, c.intermediateSize, c.mlpBias);
            b.linear(p + ".mlp.down_proj", c.intermediateSize, h, c.mlpBias);
            b.plain(p + ".mlp.act_fn", "SiLUActivation");
        }
        b.rmsNorm(p + ".input_layernorm", k + "RMSNorm", h);
        b.rmsNorm(p + ".post_attention_layernorm", k + "RMSNorm", h);
    }
    b.rmsNorm("model.norm", k + "RMSNorm", h);
    b.module("model.rotary_emb", k + "RotaryEmbedding");
    // Both non-persistent: the frequencies and the copy dynamic RoPE variants reset to.
    b.buffer("model.rotary_emb.inv_freq", DType::F32, {c.headDim / 2});
    b.buffer("model.rotary_emb.original_inv_freq", DType::F32, {c.headDim / 2});
    b.linear("lm_head", h, c.vocabSize, false);
}

} // namespace

std::vector<std::string> supportedFamilies()
{
    return {"gpt2", "llama", "mistral", "qwen2", "mixtral"};
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
            return classPrefix(modelType) + "DecoderLayer";
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
        if (c.architecture.empty())
            c.architecture = "GPT2LMHeadModel";
    } else if (c.modelType == "llama" || c.modelType == "mistral" || c.modelType == "qwen2" ||
               c.modelType == "mixtral") {
        const bool qwen = c.modelType == "qwen2";
        const bool llama = c.modelType == "llama";
        c.vocabSize = size.get("vocab_size", qwen ? 151936 : 32000, 1, m.vocabulary);
        c.hiddenSize = size.get("hidden_size", 4096, 1, m.width);
        c.intermediateSize = size.get("intermediate_size", llama ? 11008 : qwen ? 22016 : 14336, 1, m.width);
        c.numLayers = size.get("num_hidden_layers", 32, 0, m.layers);
        c.numHeads = size.get("num_attention_heads", 32, 1, m.heads);
        // transformers' defaults when the key is absent: Llama the head count, Qwen2 32, the others 8.
        c.numKeyValueHeads = size.get("num_key_value_heads", llama ? c.numHeads : qwen ? 32 : 8, 1, m.heads);
        c.maxPositions = size.get("max_position_embeddings", llama ? 2048 : qwen ? 32768 : 4096 * 32, 0, m.positions);
        c.tieWordEmbeddings = boolOr(j, "tie_word_embeddings", false);
        c.attentionBias = qwen ? true : boolOr(j, "attention_bias", false);
        c.mlpBias = llama && boolOr(j, "mlp_bias", false);
        c.numExperts = c.modelType == "mixtral" ? size.get("num_local_experts", 8, 1, m.experts) : 0;
        c.expertsPerToken = c.modelType == "mixtral" ? size.get("num_experts_per_tok", 2, 1, m.experts) : 0;
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
    c.headDim = size.get("head_dim", c.hiddenSize / std::max<int64_t>(c.numHeads, 1), 1, m.width);
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
    Builder b(s, dtype.value_or(config.torchDtype.value_or(DType::F32)));
    if (config.modelType == "gpt2")
        buildGpt2(config, b);
    else
        buildLlamaLike(config, b, layout);
    if (config.tieWordEmbeddings)
        s.tie("lm_head.weight", config.modelType == "gpt2" ? "transformer.wte.weight" : "model.embed_tokens.weight");
    return s;
}

} // namespace accel::bigmodel
