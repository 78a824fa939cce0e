// The Llama family (model_type "llama", "mistral", "qwen2") with Transformers' parameter names:
// model.embed_tokens, blocks model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj,
// post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm, lm_head (tied to embed_tokens
// when tie_word_embeddings). RMSNorm, RoPE with rope_theta (rotate_half convention), SwiGLU,
// grouped-query attention, q/k/v biases for qwen2 or attention_bias. Includes libtorch: only torch
// .cpp files include it.
#pragma once

#include "core/inference/causallm.h"

namespace accel::inference {

class LlamaAttention : public DeviceModule {
public:
    explicit LlamaAttention(const ModelConfig &config);
    at::Tensor forward(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin, KVCache *cache, size_t layer);

private:
    Linear *m_q, *m_k, *m_v, *m_o;
    int64_t m_heads, m_kvHeads, m_headDim;
    double m_attentionDropout;
};

class LlamaBlock : public DeviceModule {
public:
    explicit LlamaBlock(const ModelConfig &config);
    at::Tensor forward(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin, KVCache *cache, size_t layer);

private:
    RMSNorm *m_inputNorm;
    LlamaAttention *m_attn;
    RMSNorm *m_postNorm;
    Module *m_mlp;
    Linear *m_gate, *m_up, *m_down;
    std::string m_activation;
};

class LlamaModel : public CausalLM {
public:
    explicit LlamaModel(const ModelConfig &config);
    at::Tensor forward(const at::Tensor &inputIds, KVCache *cache, bool lastOnly = false) override;
    std::string blockPrefix() const override { return "model.layers"; }
    std::vector<std::shared_ptr<Module>> blocks() const override { return m_blockModules; }

private:
    Embedding *m_embed;
    std::vector<LlamaBlock *> m_blocks;
    std::vector<std::shared_ptr<Module>> m_blockModules;
    RMSNorm *m_norm;
    Linear *m_lmHead = nullptr; // null when tied
    at::Tensor m_invFreq;       // [head_dim / 2], float32
};

// rotate_half RoPE as Transformers applies it: x * cos + rotate_half(x) * sin, with cos/sin
// [T, head_dim] (the frequencies repeated twice) broadcast over batch and heads.
at::Tensor applyRotary(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin);

} // namespace accel::inference
