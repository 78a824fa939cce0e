#include "core/inference/gpt2model.h"

#include <cmath>

namespace accel::inference {

Gpt2Attention::Gpt2Attention(const ModelConfig &config)
    : DeviceModule("GPT2Attention"), m_heads(config.numHeads), m_headDim(config.headDim),
      m_attentionDropout(config.attentionDropout), m_residualDropout(config.residualDropout),
      m_scaleWeights(config.scaleAttentionWeights), m_scaleByInverseLayer(config.scaleAttentionByInverseLayer),
      m_upcastScores(config.upcastAttentionScores)
{
    m_qkv = addChild("c_attn", std::make_unique<Conv1D>(config.hiddenSize, 3 * config.hiddenSize));
    m_proj = addChild("c_proj", std::make_unique<Conv1D>(config.hiddenSize, config.hiddenSize));
}

at::Tensor Gpt2Attention::forward(const at::Tensor &x, KVCache *cache, size_t layer)
{
    ForwardScope scope(*this);
    const int64_t batch = x.size(0), tokens = x.size(1);
    auto qkv = m_qkv->forward(x).view({batch, tokens, 3, m_heads, m_headDim}).permute({2, 0, 3, 1, 4});
    at::Tensor q = qkv[0], k = qkv[1], v = qkv[2];
    if (cache)
        std::tie(k, v) = cache->append(layer, k, v);
    // causalAttention scales the scores by 1/sqrt(head_dim); the query carries the rest of GPT-2's
    // scaling (none without scale_attn_weights, 1/(layer + 1) with scale_attn_by_inverse_layer_idx).
    const double scale = (m_scaleWeights ? 1.0 : std::sqrt(static_cast<double>(m_headDim))) /
                         (m_scaleByInverseLayer ? static_cast<double>(layer + 1) : 1.0);
    if (scale != 1.0)
        q = q * scale;
    if (m_upcastScores && q.scalar_type() != at::kFloat) { // reorder_and_upcast_attn: float32 scores
        q = q.to(at::kFloat);
        k = k.to(at::kFloat);
    }
    auto out = causalAttention(q, k, v, is_training() ? m_attentionDropout : 0.0)
                   .transpose(1, 2)
                   .reshape({batch, tokens, m_heads * m_headDim});
    return dropoutIn(*this, m_proj->forward(out), m_residualDropout);
}

Gpt2Block::Gpt2Block(const ModelConfig &config)
    : DeviceModule("GPT2Block"), m_activation(config.activation), m_residualDropout(config.residualDropout)
{
    m_ln1 = addChild("ln_1", std::make_unique<LayerNorm>(config.hiddenSize, config.normEps));
    m_attn = addChild("attn", std::make_unique<Gpt2Attention>(config));
    m_ln2 = addChild("ln_2", std::make_unique<LayerNorm>(config.hiddenSize, config.normEps));
    auto mlp = std::make_unique<Container>("GPT2MLP");
    m_fc = mlp->add("c_fc", std::make_unique<Conv1D>(config.hiddenSize, config.intermediateSize));
    m_proj = mlp->add("c_proj", std::make_unique<Conv1D>(config.intermediateSize, config.hiddenSize));
    m_mlp = addChild("mlp", std::move(mlp));
}

at::Tensor Gpt2Block::forward(const at::Tensor &x, KVCache *cache, size_t layer)
{
    ForwardScope scope(*this);
    auto h = toDevice(x);
    h = h + m_attn->forward(m_ln1->forward(h), cache, layer);
    ForwardScope mlpScope(*m_mlp);
    return h + dropoutIn(*this, m_proj->forward(activate(m_fc->forward(m_ln2->forward(h)), m_activation)),
                         m_residualDropout);
}

Gpt2Model::Gpt2Model(const ModelConfig &config) : CausalLM("GPT2LMHeadModel", config)
{
    auto transformer = std::make_unique<Container>("GPT2Model");
    m_wte = transformer->add("wte", std::make_unique<Embedding>(config.vocabSize, config.hiddenSize));
    m_wpe = transformer->add("wpe", std::make_unique<Embedding>(config.maxPositions, config.hiddenSize));
    auto blocks = std::make_unique<Container>("ModuleList");
    for (int64_t i = 0; i < config.numLayers; ++i)
        m_blocks.push_back(blocks->add(std::to_string(i), std::make_unique<Gpt2Block>(config)));
    for (const auto &entry : blocks->children())
        m_blockModules.push_back(entry.second);
    transformer->add("h", std::move(blocks));
    m_lnf = transformer->add("ln_f", std::make_unique<LayerNorm>(config.hiddenSize, config.normEps));
    addChild("transformer", std::move(transformer));
    if (!config.tieWordEmbeddings)
        m_lmHead = addChild("lm_head", std::make_unique<Linear>(config.hiddenSize, config.vocabSize, false));
}

at::Tensor Gpt2Model::forward(const at::Tensor &inputIds, KVCache *cache, bool lastOnly)
{
    ForwardScope scope(*this);
    return runModel([&] {
        const int64_t past = cache ? cache->length() : 0;
        const int64_t tokens = inputIds.size(1);
        auto positions = at::arange(past, past + tokens, at::TensorOptions().dtype(at::kLong));
        auto h = m_wte->forward(inputIds);
        h = dropoutIn(*this, h + m_wpe->forward(positions).to(h.device()).unsqueeze(0), config().embeddingDropout);
        for (size_t i = 0; i < m_blocks.size(); ++i) {
            Gpt2Block *block = m_blocks[i];
            h = runBlock(i, h, [block, cache, i](const at::Tensor &x) { return block->forward(x, cache, i); });
        }
        if (cache)
            cache->advance(tokens);
        if (lastOnly)
            h = h.narrow(1, tokens - 1, 1);
        h = m_lnf->forward(h);
        auto logits = m_lmHead ? m_lmHead->forward(h) : m_wte->project(h);
        return logits.to(executionDevice(), at::kFloat);
    });
}

} // namespace accel::inference
