// GPT-2 (model_type "gpt2") with Transformers' parameter names: transformer.wte/wpe, blocks
// transformer.h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj} (Conv1D weights
// stored [in, out]), transformer.ln_f, lm_head tied to wte unless tie_word_embeddings is false.
// Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/inference/causallm.h"

namespace accel::inference {

class Gpt2Attention : public DeviceModule {
public:
    explicit Gpt2Attention(const ModelConfig &config);
    at::Tensor forward(const at::Tensor &x, KVCache *cache, size_t layer);

private:
    Conv1D *m_qkv;
    Conv1D *m_proj;
    int64_t m_heads, m_headDim;
    double m_attentionDropout, m_residualDropout;
    bool m_scaleWeights, m_scaleByInverseLayer, m_upcastScores;
};

class Gpt2Block : public DeviceModule {
public:
    explicit Gpt2Block(const ModelConfig &config);
    at::Tensor forward(const at::Tensor &x, KVCache *cache, size_t layer);

private:
    LayerNorm *m_ln1;
    Gpt2Attention *m_attn;
    LayerNorm *m_ln2;
    Module *m_mlp;
    Conv1D *m_fc;
    Conv1D *m_proj;
    std::string m_activation;
    double m_residualDropout;
};

class Gpt2Model : public CausalLM {
public:
    explicit Gpt2Model(const ModelConfig &config);
    at::Tensor forward(const at::Tensor &inputIds, KVCache *cache, bool lastOnly = false) override;
    std::string blockPrefix() const override { return "transformer.h"; }
    std::vector<std::shared_ptr<Module>> blocks() const override { return m_blockModules; }

private:
    Embedding *m_wte;
    Embedding *m_wpe;
    std::vector<Gpt2Block *> m_blocks;
    std::vector<std::shared_ptr<Module>> m_blockModules;
    LayerNorm *m_lnf;
    Linear *m_lmHead = nullptr; // null when tied to wte
};

} // namespace accel::inference
