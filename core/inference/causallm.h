// The causal language models on libtorch, created from config.json's model_type, and their
// key/value cache. Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/common/result.h"
#include "core/inference/layers.h"
#include "core/inference/modelconfig.h"

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

    // Logits [B, T, vocab] (float32) for input ids [B, T] (int64). With a cache, the ids continue
    // after the cached positions and their keys/values are appended. With lastOnly only the last
    // position's logits are computed ([B, 1, vocab]).
    virtual at::Tensor forward(const at::Tensor &inputIds, KVCache *cache, bool lastOnly = false) = 0;
    // Prefix of the repeated blocks ("transformer.h" / "model.layers").
    virtual std::string blockPrefix() const = 0;

private:
    ModelConfig m_config;
};

Result<std::unique_ptr<CausalLM>> createCausalLM(const ModelConfig &config);

} // namespace accel::inference
