#include "core/inference/llamamodel.h"

namespace accel::inference {

at::Tensor applyRotary(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin)
{
    const int64_t half = x.size(-1) / 2;
    auto rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
    return x * cos + rotated * sin;
}

LlamaAttention::LlamaAttention(const ModelConfig &config)
    : DeviceModule("LlamaAttention"), m_heads(config.numHeads), m_kvHeads(config.numKeyValueHeads),
      m_headDim(config.headDim), m_attentionDropout(config.attentionDropout)
{
    const bool bias = config.attentionBias;
    m_q = addChild("q_proj", std::make_unique<Linear>(config.hiddenSize, m_heads * m_headDim, bias));
    m_k = addChild("k_proj", std::make_unique<Linear>(config.hiddenSize, m_kvHeads * m_headDim, bias));
    m_v = addChild("v_proj", std::make_unique<Linear>(config.hiddenSize, m_kvHeads * m_headDim, bias));
    // qwen2 has biases on q/k/v only; llama's attention_bias covers o_proj too.
    m_o = addChild("o_proj", std::make_unique<Linear>(m_heads * m_headDim, config.hiddenSize,
                                                      bias && config.modelType != "qwen2"));
}

at::Tensor LlamaAttention::forward(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin, KVCache *cache,
                                   size_t layer)
{
    ForwardScope scope(*this);
    const int64_t batch = x.size(0), tokens = x.size(1);
    auto q = m_q->forward(x).view({batch, tokens, m_heads, m_headDim}).transpose(1, 2);
    auto k = m_k->forward(x).view({batch, tokens, m_kvHeads, m_headDim}).transpose(1, 2);
    auto v = m_v->forward(x).view({batch, tokens, m_kvHeads, m_headDim}).transpose(1, 2);
    auto c = cos.to(q.device(), q.scalar_type());
    auto s = sin.to(q.device(), q.scalar_type());
    q = applyRotary(q, c, s);
    k = applyRotary(k, c, s);
    if (cache)
        std::tie(k, v) = cache->append(layer, k, v);
    auto out = causalAttention(q, k, v, is_training() ? m_attentionDropout : 0.0)
                   .transpose(1, 2)
                   .reshape({batch, tokens, m_heads * m_headDim});
    return m_o->forward(out);
}

LlamaBlock::LlamaBlock(const ModelConfig &config) : DeviceModule("LlamaDecoderLayer"), m_activation(config.activation)
{
    m_inputNorm = addChild("input_layernorm", std::make_unique<RMSNorm>(config.hiddenSize, config.normEps));
    m_attn = addChild("self_attn", std::make_unique<LlamaAttention>(config));
    m_postNorm = addChild("post_attention_layernorm", std::make_unique<RMSNorm>(config.hiddenSize, config.normEps));
    auto mlp = std::make_unique<Container>("LlamaMLP");
    m_gate =
        mlp->add("gate_proj", std::make_unique<Linear>(config.hiddenSize, config.intermediateSize, config.mlpBias));
    m_up = mlp->add("up_proj", std::make_unique<Linear>(config.hiddenSize, config.intermediateSize, config.mlpBias));
    m_down =
        mlp->add("down_proj", std::make_unique<Linear>(config.intermediateSize, config.hiddenSize, config.mlpBias));
    m_mlp = addChild("mlp", std::move(mlp));
}

at::Tensor LlamaBlock::forward(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin, KVCache *cache,
                               size_t layer)
{
    ForwardScope scope(*this);
    auto h = toDevice(x);
    h = h + m_attn->forward(m_inputNorm->forward(h), cos, sin, cache, layer);
    ForwardScope mlpScope(*m_mlp);
    auto n = m_postNorm->forward(h);
    return h + m_down->forward(activate(m_gate->forward(n), m_activation) * m_up->forward(n));
}

LlamaModel::LlamaModel(const ModelConfig &config) : CausalLM("LlamaForCausalLM", config)
{
    auto model = std::make_unique<Container>("LlamaModel");
    m_embed = model->add("embed_tokens", std::make_unique<Embedding>(config.vocabSize, config.hiddenSize));
    auto layers = std::make_unique<Container>("ModuleList");
    for (int64_t i = 0; i < config.numLayers; ++i)
        m_blocks.push_back(layers->add(std::to_string(i), std::make_unique<LlamaBlock>(config)));
    for (const auto &entry : layers->children())
        m_blockModules.push_back(entry.second);
    model->add("layers", std::move(layers));
    m_norm = model->add("norm", std::make_unique<RMSNorm>(config.hiddenSize, config.normEps));
    addChild("model", std::move(model));
    if (!config.tieWordEmbeddings)
        m_lmHead = addChild("lm_head", std::make_unique<Linear>(config.hiddenSize, config.vocabSize, false));
    const int64_t dim = config.headDim;
    m_invFreq = 1.0 / at::pow(config.ropeTheta,
                              at::arange(0, dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) / dim);
}

at::Tensor LlamaModel::forward(const at::Tensor &inputIds, KVCache *cache, bool lastOnly)
{
    ForwardScope scope(*this);
    return runModel([&] {
        const int64_t past = cache ? cache->length() : 0;
        const int64_t tokens = inputIds.size(1);
        auto positions = at::arange(past, past + tokens, at::TensorOptions().dtype(at::kFloat));
        auto freqs = at::outer(positions, m_invFreq);
        auto emb = at::cat({freqs, freqs}, -1);
        const at::Tensor cos = emb.cos(), sin = emb.sin();
        auto h = m_embed->forward(inputIds);
        for (size_t i = 0; i < m_blocks.size(); ++i) {
            LlamaBlock *block = m_blocks[i];
            h = runBlock(i, h, [block, cos, sin, cache, i](const at::Tensor &x) {
                return block->forward(x, cos, sin, cache, i);
            });
        }
        if (cache)
            cache->advance(tokens);
        if (lastOnly)
            h = h.narrow(1, tokens - 1, 1);
        h = m_norm->forward(h);
        auto logits = m_lmHead ? m_lmHead->forward(h) : m_embed->project(h);
        return logits.to(executionDevice(), at::kFloat);
    });
}

} // namespace accel::inference
