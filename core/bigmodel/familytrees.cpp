#include "core/bigmodel/familytrees.h"

#include <algorithm>

namespace accel::bigmodel {

namespace {

class Builder {
public:
    Builder(ModelStructure &s, DType dtype) : m_s(s), m_dtype(dtype) {}
    DType dtype() const { return m_dtype; }
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
    void embedding(const std::string &name, int64_t count, int64_t dim, const std::string &cls = "Embedding")
    {
        module(name, cls);
        param(name + ".weight", {count, dim});
    }

private:
    ModelStructure &m_s;
    DType m_dtype;
};

bool isGemma(const std::string &type)
{
    return type == "gemma" || type == "gemma2";
}

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
        b.plain(p + ".mlp.act", activationClassName(c.activation));
        b.plain(p + ".mlp.dropout", "Dropout");
    }
    b.layerNorm("transformer.ln_f", h);
    b.linear("lm_head", h, c.vocabSize, false);
}

// gate / up / down projections and the activation: LlamaMLP and the families' copies of it.
void gatedMlp(Builder &b, const std::string &p, const std::string &cls, int64_t h, int64_t inner, bool bias,
              const std::string &activation)
{
    b.module(p, cls);
    b.linear(p + ".gate_proj", h, inner, bias);
    b.linear(p + ".up_proj", h, inner, bias);
    b.linear(p + ".down_proj", inner, h, bias);
    b.plain(p + ".act_fn", activationClassName(activation));
}

void attention(const ModelConfig &c, Builder &b, const std::string &p, const std::string &k)
{
    const int64_t h = c.hiddenSize;
    const int64_t qOut = c.numHeads * c.headDim;
    const int64_t kvOut = c.numKeyValueHeads * c.headDim;
    b.module(p, k + "Attention");
    if (c.modelType == "phi3") {
        // Phi-3 registers o_proj first, then one fused q/k/v projection.
        b.linear(p + ".o_proj", qOut, h, false);
        b.linear(p + ".qkv_proj", h, qOut + 2 * kvOut, false);
        return;
    }
    b.linear(p + ".q_proj", h, qOut, c.attentionBias);
    b.linear(p + ".k_proj", h, kvOut, c.attentionBias);
    b.linear(p + ".v_proj", h, kvOut, c.attentionBias);
    b.linear(p + ".o_proj", qOut, h, c.outputBias);
    if (c.modelType == "qwen3") {
        b.rmsNorm(p + ".q_norm", k + "RMSNorm", c.headDim);
        b.rmsNorm(p + ".k_norm", k + "RMSNorm", c.headDim);
    }
}

void mixtralMlp(const ModelConfig &c, Builder &b, const std::string &p, MixtralLayout layout)
{
    const int64_t h = c.hiddenSize;
    if (layout == MixtralLayout::PerExpert) {
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
            b.plain(x + ".act_fn", activationClassName(c.activation));
        }
        return;
    }
    // transformers 5: the router and one module holding every expert's weights as 3-D tensors.
    const std::string m = p + ".mlp";
    b.module(m, "MixtralSparseMoeBlock");
    b.module(m + ".gate", "MixtralTopKRouter");
    b.param(m + ".gate.weight", {c.numExperts, h});
    b.module(m + ".experts", "MixtralExperts");
    b.param(m + ".experts.gate_up_proj", {c.numExperts, 2 * c.intermediateSize, h});
    b.param(m + ".experts.down_proj", {c.numExperts, h, c.intermediateSize});
    b.plain(m + ".experts.act_fn", activationClassName(c.activation));
}

// Qwen2-MoE: routed experts (fused in transformers 5, one Qwen2MoeMLP each in Hub checkpoints),
// a shared expert and its gate; layers in mlp_only_layers, or off the sparse step, stay dense.
void qwen2MoeMlp(const ModelConfig &c, Builder &b, const std::string &p, int64_t layer, MixtralLayout layout)
{
    const int64_t h = c.hiddenSize;
    const bool dense = std::find(c.mlpOnlyLayers.begin(), c.mlpOnlyLayers.end(), layer) != c.mlpOnlyLayers.end() ||
                       c.numExperts <= 0 || (layer + 1) % std::max<int64_t>(c.decoderSparseStep, 1) != 0;
    const std::string m = p + ".mlp";
    if (dense) {
        gatedMlp(b, m, "Qwen2MoeMLP", h, c.intermediateSize, false, c.activation);
        return;
    }
    b.module(m, "Qwen2MoeSparseMoeBlock");
    if (layout == MixtralLayout::PerExpert) {
        b.linear(m + ".gate", h, c.numExperts, false);
        b.module(m + ".experts", "ModuleList");
        for (int64_t e = 0; e < c.numExperts; ++e)
            gatedMlp(b, m + ".experts." + std::to_string(e), "Qwen2MoeMLP", h, c.moeIntermediateSize, false,
                     c.activation);
    } else {
        b.module(m + ".gate", "Qwen2MoeTopKRouter");
        b.param(m + ".gate.weight", {c.numExperts, h});
        b.module(m + ".experts", "Qwen2MoeExperts");
        b.param(m + ".experts.gate_up_proj", {c.numExperts, 2 * c.moeIntermediateSize, h});
        b.param(m + ".experts.down_proj", {c.numExperts, h, c.moeIntermediateSize});
        b.plain(m + ".experts.act_fn", activationClassName(c.activation));
    }
    gatedMlp(b, m + ".shared_expert", "Qwen2MoeMLP", h, c.sharedExpertIntermediateSize, false, c.activation);
    b.linear(m + ".shared_expert_gate", h, 1, false);
}

void buildLlamaLike(const ModelConfig &c, Builder &b, MixtralLayout layout)
{
    const std::string k = familyClassPrefix(c.modelType);
    const int64_t h = c.hiddenSize;
    b.module("model", k + "Model");
    b.embedding("model.embed_tokens", c.vocabSize, h,
                isGemma(c.modelType) ? k + "TextScaledWordEmbedding" : "Embedding");
    if (isGemma(c.modelType)) // sqrt(hidden_size) in the model's dtype, not persistent
        b.buffer("model.embed_tokens.embed_scale", b.dtype(), {});
    b.module("model.layers", "ModuleList");
    for (int64_t i = 0; i < c.numLayers; ++i) {
        const std::string p = "model.layers." + std::to_string(i);
        b.module(p, k + "DecoderLayer");
        attention(c, b, p + ".self_attn", k);
        if (c.modelType == "mixtral") {
            mixtralMlp(c, b, p, layout);
        } else if (c.modelType == "qwen2_moe") {
            qwen2MoeMlp(c, b, p, i, layout);
        } else if (c.modelType == "phi3") {
            b.module(p + ".mlp", "Phi3MLP");
            b.linear(p + ".mlp.gate_up_proj", h, 2 * c.intermediateSize, false);
            b.linear(p + ".mlp.down_proj", c.intermediateSize, h, false);
            b.plain(p + ".mlp.activation_fn", activationClassName(c.activation));
        } else {
            gatedMlp(b, p + ".mlp", k + "MLP", h, c.intermediateSize, c.mlpBias, c.activation);
        }
        b.rmsNorm(p + ".input_layernorm", k + "RMSNorm", h);
        b.rmsNorm(p + ".post_attention_layernorm", k + "RMSNorm", h);
        if (c.modelType == "gemma2") {
            b.rmsNorm(p + ".pre_feedforward_layernorm", k + "RMSNorm", h);
            b.rmsNorm(p + ".post_feedforward_layernorm", k + "RMSNorm", h);
        }
        if (c.modelType == "phi3") {
            b.plain(p + ".resid_attn_dropout", "Dropout");
            b.plain(p + ".resid_mlp_dropout", "Dropout");
        }
    }
    b.rmsNorm("model.norm", k + "RMSNorm", h);
    b.module("model.rotary_emb", k + "RotaryEmbedding");
    // Both non-persistent and float32: the frequencies and the copy dynamic RoPE variants reset to.
    const int64_t frequencies = (c.rotaryDim + 1) / 2;
    b.buffer("model.rotary_emb.inv_freq", DType::F32, {frequencies});
    b.buffer("model.rotary_emb.original_inv_freq", DType::F32, {frequencies});
    b.linear("lm_head", h, c.vocabSize, false);
}

} // namespace

std::string familyClassPrefix(const std::string &modelType)
{
    static const std::pair<const char *, const char *> prefixes[] = {
        {"llama", "Llama"},   {"mistral", "Mistral"},    {"qwen2", "Qwen2"}, {"mixtral", "Mixtral"}, {"gemma", "Gemma"},
        {"gemma2", "Gemma2"}, {"qwen2_moe", "Qwen2Moe"}, {"qwen3", "Qwen3"}, {"phi3", "Phi3"},
    };
    for (const auto &[type, prefix] : prefixes) {
        if (modelType == type)
            return prefix;
    }
    return "GPT2";
}

std::string activationClassName(const std::string &activation)
{
    static const std::pair<const char *, const char *> classes[] = {
        {"gelu", "GELUActivation"},
        {"gelu_10", "ClippedGELUActivation"},
        {"gelu_fast", "FastGELUActivation"},
        {"gelu_new", "NewGELUActivation"},
        {"gelu_python", "GELUActivation"},
        {"gelu_pytorch_tanh", "GELUTanh"},
        {"gelu_python_tanh", "GELUTanh"},
        {"gelu_accurate", "AccurateGELUActivation"},
        {"hardswish", "Hardswish"},
        {"laplace", "LaplaceActivation"},
        {"leaky_relu", "LeakyReLU"},
        {"linear", "LinearActivation"},
        {"mish", "MishActivation"},
        {"quick_gelu", "QuickGELUActivation"},
        {"relu", "ReLU"},
        {"relu2", "ReLUSquaredActivation"},
        {"relu6", "ReLU6"},
        {"sigmoid", "Sigmoid"},
        {"silu", "SiLUActivation"},
        {"sqrtsoftplus", "SqrtSoftplusActivation"},
        {"swish", "SiLU"},
        {"tanh", "Tanh"},
    };
    for (const auto &[name, cls] : classes) {
        if (activation == name)
            return cls;
    }
    return "Activation";
}

void buildFamilyTree(const ModelConfig &config, ModelStructure &s, DType dtype, MixtralLayout layout)
{
    Builder b(s, dtype);
    if (config.modelType == "gpt2")
        buildGpt2(config, b);
    else
        buildLlamaLike(config, b, layout);
}

} // namespace accel::bigmodel
