#include "core/inference/llamamodel.h"

#include "core/bigmodel/familytrees.h"
#include "core/plan/tensorparallelrefusal.h"

#include <cmath>
#include <stdexcept>

namespace accel::inference {

namespace {

std::string classPrefix(const ModelConfig &config)
{
    return bigmodel::familyClassPrefix(config.modelType);
}

std::unique_ptr<RMSNorm> norm(const ModelConfig &config, int64_t size)
{
    return std::make_unique<RMSNorm>(size, config.normEps, config.normPlusOne, classPrefix(config) + "RMSNorm");
}

} // namespace

LlamaAttention::LlamaAttention(const ModelConfig &config, int64_t layer)
    : DeviceModule(classPrefix(config) + "Attention"), m_heads(config.numHeads), m_kvHeads(config.numKeyValueHeads),
      m_headDim(config.headDim), m_attentionDropout(config.attentionDropout)
{
    const int64_t hidden = config.hiddenSize, qOut = m_heads * m_headDim, kvOut = m_kvHeads * m_headDim;
    if (config.fusedQkv) { // Phi-3 registers o_proj first
        m_o = addChild("o_proj", std::make_unique<Linear>(qOut, hidden, config.outputBias));
        m_qkv = addChild("qkv_proj", std::make_unique<Linear>(hidden, qOut + 2 * kvOut, config.attentionBias));
    } else {
        m_q = addChild("q_proj", std::make_unique<Linear>(hidden, qOut, config.attentionBias));
        m_k = addChild("k_proj", std::make_unique<Linear>(hidden, kvOut, config.attentionBias));
        m_v = addChild("v_proj", std::make_unique<Linear>(hidden, kvOut, config.attentionBias));
        m_o = addChild("o_proj", std::make_unique<Linear>(qOut, hidden, config.outputBias));
    }
    if (config.qkNorm) {
        m_qNorm = addChild("q_norm", norm(config, m_headDim));
        m_kNorm = addChild("k_norm", norm(config, m_headDim));
    }
    m_options.scale = config.attentionScale;
    m_options.softcap = config.attentionSoftcap;
    m_options.window = config.layerWindows.empty() ? 0 : config.layerWindows[static_cast<size_t>(layer)];
}

at::Tensor LlamaAttention::forward(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin, KVCache *cache,
                                   size_t layer)
{
    ForwardScope scope(*this);
    // Sequence parallel: entering gathers every rank's tokens.
    const at::Tensor input = m_tensorParallel ? enterTensorParallel(toDevice(x), *m_tensorParallel) : x;
    const int64_t batch = input.size(0), tokens = input.size(1);
    at::Tensor q, k, v;
    if (m_qkv) {
        auto qkv = m_qkv->forward(input);
        const int64_t qOut = m_heads * m_headDim, kvOut = m_kvHeads * m_headDim;
        q = qkv.narrow(-1, 0, qOut);
        k = qkv.narrow(-1, qOut, kvOut);
        v = qkv.narrow(-1, qOut + kvOut, kvOut);
    } else {
        q = m_q->forward(input);
        k = m_k->forward(input);
        v = m_v->forward(input);
    }
    q = q.reshape({batch, tokens, m_heads, m_headDim});
    k = k.reshape({batch, tokens, m_kvHeads, m_headDim});
    if (m_qNorm) {
        q = m_qNorm->forward(q);
        k = m_kNorm->forward(k);
    }
    q = q.transpose(1, 2);
    k = k.transpose(1, 2);
    v = v.reshape({batch, tokens, m_kvHeads, m_headDim}).transpose(1, 2);
    auto c = cos.to(q.device(), q.scalar_type());
    auto s = sin.to(q.device(), q.scalar_type());
    q = applyRotary(q, c, s);
    k = applyRotary(k, c, s);
    if (cache)
        std::tie(k, v) = cache->append(layer, k, v);
    AttentionOptions options = m_options;
    options.dropout = is_training() ? m_attentionDropout : 0.0;
    auto attended =
        m_contextParallel ? ringAttention(q, k, v, options, *m_contextParallel) : causalAttention(q, k, v, options);
    auto out = attended.transpose(1, 2).reshape({batch, tokens, m_heads * m_headDim});
    return m_o->forward(out);
}

void LlamaAttention::splitForTensorParallel(const TensorParallel &group)
{
    for (Linear *column : {m_q, m_k, m_v})
        column->splitForTensorParallel(TensorParallelStyle::Column, group);
    m_o->splitForTensorParallel(TensorParallelStyle::Row, group);
    // Qwen3's q_norm / k_norm are whole on every rank but see only this rank's heads.
    for (RMSNorm *headNorm : {m_qNorm, m_kNorm}) {
        if (headNorm)
            headNorm->sumGradientOver(group);
    }
    m_heads /= group->size;
    m_kvHeads /= group->size;
    m_tensorParallel = group;
}

void LlamaAttention::gatherTensorParallel()
{
    if (!m_tensorParallel)
        return;
    for (Linear *linear : {m_q, m_k, m_v, m_o})
        linear->gatherTensorParallel();
    for (RMSNorm *headNorm : {m_qNorm, m_kNorm}) {
        if (headNorm)
            headNorm->sumGradientOver(nullptr);
    }
    m_heads *= m_tensorParallel->size;
    m_kvHeads *= m_tensorParallel->size;
    m_tensorParallel.reset();
}

LlamaBlock::LlamaBlock(const ModelConfig &config, int64_t layer)
    : DeviceModule(classPrefix(config) + "DecoderLayer"), m_residualDropout(config.residualDropout)
{
    m_attn = addChild("self_attn", std::make_unique<LlamaAttention>(config, layer));
    auto [name, mlp] = makeFeedForward(config, layer);
    m_mlp = addChild(name, std::move(mlp));
    m_inputNorm = addChild("input_layernorm", norm(config, config.hiddenSize));
    m_postNorm = addChild("post_attention_layernorm", norm(config, config.hiddenSize));
    if (config.sandwichNorms) {
        m_preFeedForwardNorm = addChild("pre_feedforward_layernorm", norm(config, config.hiddenSize));
        m_postFeedForwardNorm = addChild("post_feedforward_layernorm", norm(config, config.hiddenSize));
    }
}

void LlamaBlock::setSequenceParallel(const TensorParallel &group)
{
    for (RMSNorm *layerNorm : {m_inputNorm, m_postNorm, m_preFeedForwardNorm, m_postFeedForwardNorm}) {
        if (layerNorm)
            layerNorm->sumGradientOver(group);
    }
    m_sequenceParallel = group;
}

at::Tensor LlamaBlock::forward(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin, KVCache *cache,
                               size_t layer)
{
    ForwardScope scope(*this);
    auto h = toDevice(x);
    auto attended = m_attn->forward(m_inputNorm->forward(h), cos, sin, cache, layer);
    if (m_postFeedForwardNorm) { // Gemma 2: each branch normalised before it joins the residual
        h = h + m_postNorm->forward(attended);
        return h + m_postFeedForwardNorm->forward(m_mlp->forward(m_preFeedForwardNorm->forward(h)));
    }
    const auto dropout = [this](const at::Tensor &y) {
        if (m_sequenceParallel && m_residualDropout > 0 && is_training())
            return sequenceParallelDropout(y, m_residualDropout, *m_sequenceParallel);
        return dropoutIn(*this, y, m_residualDropout);
    };
    h = h + dropout(attended);
    return h + dropout(m_mlp->forward(m_postNorm->forward(h)));
}

LlamaModel::LlamaModel(const ModelConfig &config)
    : CausalLM(classPrefix(config) + "ForCausalLM", config), m_rotary(config.rope)
{
    auto model = std::make_unique<Container>(classPrefix(config) + "Model");
    m_embed = model->add("embed_tokens", std::make_unique<Embedding>(config.vocabSize, config.hiddenSize));
    auto layers = std::make_unique<Container>("ModuleList");
    for (int64_t i = 0; i < config.numLayers; ++i)
        m_blocks.push_back(layers->add(std::to_string(i), std::make_unique<LlamaBlock>(config, i)));
    for (const auto &entry : layers->children())
        m_blockModules.push_back(entry.second);
    model->add("layers", std::move(layers));
    m_norm = model->add("norm", norm(config, config.hiddenSize));
    addChild("model", std::move(model));
    if (!config.tieWordEmbeddings)
        m_lmHead = addChild("lm_head", std::make_unique<Linear>(config.hiddenSize, config.vocabSize, false));
}

bool LlamaModel::rebuildsCacheAt(int64_t past, int64_t tokens) const
{
    const ModelConfig &c = config();
    const int64_t original = c.rope.originalMaxPositions;
    return c.modelType == "phi3" && c.rope.type == "longrope" && past > 0 && past <= original &&
           past + tokens > original;
}

Result<void> LlamaModel::checkTensorParallel(int size) const
{
    const ModelConfig &c = config();
    runtime::TensorParallelModel model;
    model.modelType = c.modelType;
    model.fusedProjections = c.fusedQkv;
    for (LlamaBlock *block : m_blocks)
        model.mixtureOfExperts = model.mixtureOfExperts || !dynamic_cast<GatedMlp *>(&block->feedForward());
    model.vocabSize = c.vocabSize;
    model.numHeads = c.numHeads;
    model.numKeyValueHeads = c.numKeyValueHeads;
    model.intermediateSize = c.intermediateSize;
    return runtime::refuseTensorParallel(model, size, tensorParallelOptions().vocabParallel);
}

Result<void> LlamaModel::splitForTensorParallel(const TensorParallel &group)
{
    if (auto ok = checkTensorParallel(group->size); !ok)
        return ok;
    const TensorParallelOptions &options = tensorParallelOptions();
    TensorParallel regions = group;
    if (options.sequenceParallel) { // the regions enter and leave over the tokens
        auto sequence = std::make_shared<TensorParallelGroup>(*group);
        sequence->sequenceParallel = true;
        regions = sequence;
        m_sequenceParallel = regions;
        m_norm->sumGradientOver(regions);
    }
    for (LlamaBlock *block : m_blocks) {
        block->attention().splitForTensorParallel(regions);
        static_cast<GatedMlp &>(block->feedForward()).splitForTensorParallel(regions);
        if (options.sequenceParallel)
            block->setSequenceParallel(regions);
    }
    if (options.vocabParallel) { // a tied head shares the embedding's rows
        m_embed->splitForTensorParallel(regions);
        if (m_lmHead)
            m_lmHead->splitForTensorParallel(TensorParallelStyle::Column, regions);
        m_vocabParallel = regions;
    }
    return {};
}

void LlamaModel::gatherTensorParallel()
{
    for (LlamaBlock *block : m_blocks) {
        block->attention().gatherTensorParallel();
        static_cast<GatedMlp &>(block->feedForward()).gatherTensorParallel();
        block->setSequenceParallel(nullptr);
    }
    m_embed->gatherTensorParallel();
    if (m_lmHead)
        m_lmHead->gatherTensorParallel();
    m_norm->sumGradientOver(nullptr);
    m_vocabParallel.reset();
    m_sequenceParallel.reset();
}

Result<void> LlamaModel::setContextParallel(const ContextParallel &group)
{
    const ModelConfig &c = config();
    if (group && c.attentionDropout > 0)
        return makeError(ErrorCode::Unsupported, "parallelism_config_cp_size " + std::to_string(group->size) +
                                                     " with attention_dropout " + std::to_string(c.attentionDropout) +
                                                     " (config.json): context-parallel attention has no dropout; "
                                                     "set attention_dropout: 0.0 or cp_size: 1");
    m_contextParallel = group;
    for (LlamaBlock *block : m_blocks)
        block->attention().setContextParallel(group);
    return {};
}

at::Tensor LlamaModel::forward(const at::Tensor &inputIds, KVCache *cache, bool lastOnly)
{
    ForwardScope scope(*this);
    if (m_contextParallel && cache)
        throw std::invalid_argument("a context-parallel forward takes no KV cache");
    if (m_sequenceParallel && (cache || lastOnly))
        throw std::invalid_argument("a sequence-parallel forward takes no KV cache and computes every position");
    return runModel([&] {
        const ModelConfig &c = config();
        const int64_t past = cache ? cache->length() : 0;
        const int64_t given = inputIds.size(1);
        // Sequence parallel: tokens appended up to a multiple of the group's size (causal attention:
        // no earlier position sees them) and their logits dropped at the end.
        const int64_t tokens = m_sequenceParallel ? (given + m_sequenceParallel->size - 1) / m_sequenceParallel->size *
                                                        m_sequenceParallel->size
                                                  : given;
        const at::Tensor ids = tokens == given ? inputIds : at::constant_pad_nd(inputIds, {0, tokens - given}, 0);
        // Context parallel: the rotation of this rank's tokens' places in the whole sequence.
        std::pair<at::Tensor, at::Tensor> rotation =
            m_contextParallel ? m_rotary.cosSin(0, tokens * m_contextParallel->size) : m_rotary.cosSin(past, tokens);
        if (m_contextParallel) {
            const at::Tensor positions = contextParallelPositions(*m_contextParallel, tokens);
            rotation = {rotation.first.index_select(0, positions.to(rotation.first.device())),
                        rotation.second.index_select(0, positions.to(rotation.second.device()))};
        }
        const at::Tensor &cos = rotation.first, &sin = rotation.second;
        // Vocabulary parallel with sequence parallel: the lookup's sum arrives as this rank's tokens.
        auto h = m_embed->forward(ids);
        if (m_sequenceParallel && !m_vocabParallel)
            h = scatterSequence(h, *m_sequenceParallel);
        if (c.scaleEmbeddings) // Gemma: sqrt(hidden_size) rounded to the embedding's dtype
            h = h * at::scalar_tensor(std::sqrt(static_cast<double>(c.hiddenSize)), at::kFloat)
                        .to(h.scalar_type())
                        .to(h.device());
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
        if (m_vocabParallel) // this rank's vocabulary columns (sequence parallel: of every token)
            h = enterTensorParallel(h, *m_vocabParallel);
        else if (m_sequenceParallel)
            h = gatherSequence(h, *m_sequenceParallel);
        if (tokens != given)
            h = h.narrow(1, 0, given);
        auto logits = m_lmHead ? m_lmHead->forward(h) : m_embed->project(h);
        if (c.finalLogitSoftcap > 0)
            logits = at::tanh(logits / c.finalLogitSoftcap) * c.finalLogitSoftcap;
        return logits.to(executionDevice(), at::kFloat);
    });
}

} // namespace accel::inference
