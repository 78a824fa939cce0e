// The Llama-like decoders with transformers' class and parameter names (<Family>ForCausalLM,
// <Family>DecoderLayer): model.embed_tokens, blocks model.layers.N.{input_layernorm,
// self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp}, model.norm, lm_head (tied to
// embed_tokens when tie_word_embeddings). One tree serves llama, mistral, qwen2, qwen3, gemma,
// gemma2, phi3, mixtral and qwen2_moe through the config's switches: RoPE variants (rotary.h),
// grouped-query attention with q/k/v and o_proj biases, sliding windows per layer, Qwen3's q_norm /
// k_norm, Phi-3's fused qkv_proj, Gemma's scaled embeddings and (1 + weight) norms, Gemma 2's
// norms around attention and MLP, query_pre_attn_scalar and soft-capping, and the feed-forward
// layers of feedforward.h. Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/inference/causallm.h"
#include "core/inference/feedforward.h"
#include "core/inference/ringattention.h"
#include "core/inference/rotary.h"

namespace accel::inference {

class LlamaAttention : public DeviceModule {
public:
    LlamaAttention(const ModelConfig &config, int64_t layer);
    at::Tensor forward(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin, KVCache *cache, size_t layer);
    // q/k/v column-wise, o row-wise: this rank's heads (LlamaModel has checked the counts).
    void splitForTensorParallel(const TensorParallel &group);
    void gatherTensorParallel();
    void setContextParallel(const ContextParallel &group) { m_contextParallel = group; }

private:
    TensorParallel m_tensorParallel;
    ContextParallel m_contextParallel;
    Linear *m_q = nullptr, *m_k = nullptr, *m_v = nullptr, *m_qkv = nullptr, *m_o = nullptr;
    RMSNorm *m_qNorm = nullptr, *m_kNorm = nullptr;
    int64_t m_heads, m_kvHeads, m_headDim;
    double m_attentionDropout;
    AttentionOptions m_options;
};

class LlamaBlock : public DeviceModule {
public:
    LlamaBlock(const ModelConfig &config, int64_t layer);
    at::Tensor forward(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin, KVCache *cache, size_t layer);
    LlamaAttention &attention() const { return *m_attn; }
    FeedForward &feedForward() const { return *m_mlp; }
    // Sequence parallel (tensorparallel.h): the input and output hold this rank's part of the
    // tokens; the norms' weight gradients are summed over the group, dropout masks this rank's
    // part of a whole-sequence mask. Null: whole sequences.
    void setSequenceParallel(const TensorParallel &group);

private:
    TensorParallel m_sequenceParallel;
    RMSNorm *m_inputNorm;
    LlamaAttention *m_attn;
    RMSNorm *m_postNorm;
    RMSNorm *m_preFeedForwardNorm = nullptr, *m_postFeedForwardNorm = nullptr; // Gemma 2
    FeedForward *m_mlp;
    double m_residualDropout;
};

class LlamaModel : public CausalLM {
public:
    explicit LlamaModel(const ModelConfig &config);
    at::Tensor forward(const at::Tensor &inputIds, KVCache *cache, bool lastOnly = false) override;
    std::string blockPrefix() const override { return "model.layers"; }
    std::vector<std::shared_ptr<Module>> blocks() const override { return m_blockModules; }
    bool rebuildsCacheAt(int64_t past, int64_t tokens) const override;
    // transformers' base_model_tp_plan of Llama, Mistral and Qwen2 (tensorparallel.h); fused
    // projections (Phi-3) and mixtures of experts are refused by name.
    Result<void> checkTensorParallel(int size) const override;
    // With the options (causallm.h): vocabulary parallel splits embed_tokens and lm_head over the
    // vocabulary (vocab_size must divide); sequence parallel splits the tokens between the regions
    // (forward pads them at the end to a multiple of the group's size and drops those logits;
    // neither a KV cache nor lastOnly).
    Result<void> splitForTensorParallel(const TensorParallel &group) override;
    void gatherTensorParallel() override;
    TensorParallel vocabParallel() const override { return m_vocabParallel; }
    // Context parallelism (ringattention.h): forward then takes this rank's part of each sequence
    // (contextParallelPart) and returns its logits; no KV cache. Refused by name for attention
    // dropout (the ring has none).
    Result<void> setContextParallel(const ContextParallel &group);

private:
    ContextParallel m_contextParallel;
    TensorParallel m_vocabParallel, m_sequenceParallel; // the regions' group, while split with the option
    Embedding *m_embed;
    std::vector<LlamaBlock *> m_blocks;
    std::vector<std::shared_ptr<Module>> m_blockModules;
    RMSNorm *m_norm;
    Linear *m_lmHead = nullptr; // null when tied
    RotaryEmbedding m_rotary;
};

} // namespace accel::inference
