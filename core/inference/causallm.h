// The causal language models on libtorch, created from config.json's model_type, and their
// key/value cache. One implementation serves inference (generate, infer, the playground) and
// training (the causal_lm recipe): training runs each block and the whole forward through the
// runners it sets (the Accelerator's sharding units, gradient checkpointing). Includes libtorch:
// only torch .cpp files include it.
#pragma once

#include "core/common/result.h"
#include "core/inference/layers.h"
#include "core/inference/modelconfig.h"

#include <functional>
#include <memory>
#include <vector>

namespace accel::inference {

// Keys and values of every layer, [B, KV heads, positions, head dim], in buffers that grow by
// doubling so that appending one token does not copy the whole cache.
class KVCache {
public:
    int64_t length() const { return m_length; }
    // Appends this step's k/v of `layer` and returns views over all cached positions. Every layer
    // appends the same number of positions per step; the length advances with layer 0's append
    // after the last layer (call advance()).
    std::pair<at::Tensor, at::Tensor> append(size_t layer, const at::Tensor &k, const at::Tensor &v);
    void advance(int64_t positions) { m_length += positions; }
    void clear();

private:
    struct Entry {
        at::Tensor keys, values;
    };
    std::vector<Entry> m_layers;
    int64_t m_length = 0;
};

class CausalLM : public DeviceModule {
public:
    CausalLM(std::string typeName, ModelConfig config) : DeviceModule(std::move(typeName)), m_config(std::move(config))
    {}
    const ModelConfig &config() const { return m_config; }

    // How a block's forward (`body`, the block applied to its input) and the whole forward run.
    // Without runners they run directly. A BlockRunner may call `body` again later (gradient
    // checkpointing recomputes it in backward): bodies own what they capture.
    using BlockBody = std::function<at::Tensor(const at::Tensor &)>;
    using BlockRunner = std::function<at::Tensor(size_t block, const at::Tensor &input, const BlockBody &body)>;
    using ModelRunner = std::function<at::Tensor(const std::function<at::Tensor()> &forward)>;
    void setRunners(BlockRunner block, ModelRunner model)
    {
        m_blockRunner = std::move(block);
        m_modelRunner = std::move(model);
    }
    // The repeated blocks (LlamaDecoderLayer, GPT2Block), in order: sharding units.
    virtual std::vector<std::shared_ptr<Module>> blocks() const = 0;

    // Logits [B, T, vocab] (float32) for input ids [B, T] (int64). With a cache, the ids continue
    // after the cached positions and their keys/values are appended. With lastOnly only the last
    // position's logits are computed ([B, 1, vocab]).
    virtual at::Tensor forward(const at::Tensor &inputIds, KVCache *cache, bool lastOnly = false) = 0;
    // Prefix of the repeated blocks ("transformer.h" / "model.layers").
    virtual std::string blockPrefix() const = 0;
    // True when a cache holding `past` positions must be rebuilt from the whole sequence before
    // `tokens` more are appended (Phi-3's LongRoPE switching to its long factors, as transformers'
    // Phi3ForCausalLM recomputes its cache there).
    virtual bool rebuildsCacheAt(int64_t past, int64_t tokens) const
    {
        (void)past;
        (void)tokens;
        return false;
    }
    // Tensor parallelism (tensorparallel.h): whether the family and config can be split over
    // `size` ranks (an error naming what cannot: no tensor-parallel plan, head counts that do not
    // divide by it), checked before loading; then on the loaded model, this rank's part of each
    // block's attention and feed-forward kept (nothing split on an error).
    virtual Result<void> checkTensorParallel(int size) const;
    virtual Result<void> splitForTensorParallel(const TensorParallel &group)
    {
        return checkTensorParallel(group->size);
    }
    // The whole weights again on every rank of the group (every rank calls it).
    virtual void gatherTensorParallel() {}
    // Vocabulary and sequence parallel (tensorparallel.h), set before checkTensorParallel: the
    // check refuses what the family cannot do with them, the split applies them. With vocabulary
    // parallel, forward returns this rank's vocabulary columns of the logits (vocabParallel() is
    // the group to compute the loss over, null otherwise).
    void setTensorParallelOptions(const TensorParallelOptions &options) { m_tensorParallelOptions = options; }
    const TensorParallelOptions &tensorParallelOptions() const { return m_tensorParallelOptions; }
    virtual TensorParallel vocabParallel() const { return nullptr; }

protected:
    at::Tensor runBlock(size_t block, const at::Tensor &input, const BlockBody &body) const
    {
        return m_blockRunner ? m_blockRunner(block, input, body) : body(input);
    }
    at::Tensor runModel(const std::function<at::Tensor()> &forward) const
    {
        return m_modelRunner ? m_modelRunner(forward) : forward();
    }

private:
    ModelConfig m_config;
    TensorParallelOptions m_tensorParallelOptions;
    BlockRunner m_blockRunner;
    ModelRunner m_modelRunner;
};

Result<std::unique_ptr<CausalLM>> createCausalLM(const ModelConfig &config);

} // namespace accel::inference
