// The feed-forward layers of the Llama-like families, with transformers' module and parameter
// names: the gated MLP (gate_proj / up_proj / down_proj; Mixtral's experts name them w1 / w3 / w2),
// Phi-3's fused gate_up_proj, and the sparse mixture-of-experts blocks of Mixtral
// (block_sparse_moe: gate, experts.N) and Qwen2-MoE (mlp: gate, experts.N, shared_expert,
// shared_expert_gate), each also in transformers 5's fused layout (the router's weight and one
// experts module holding 3-D gate_up_proj [E, 2 I, H] and down_proj [E, H, I]). Includes libtorch:
// only torch .cpp files include it.
#pragma once

#include "core/inference/layers.h"
#include "core/inference/modelconfig.h"

#include <vector>

namespace accel::inference {

class FeedForward : public DeviceModule {
public:
    using DeviceModule::DeviceModule;
    virtual at::Tensor forward(const at::Tensor &x) = 0;
};

struct GatedNames {
    std::string gate = "gate_proj", up = "up_proj", down = "down_proj";
};

// down(act(gate(x)) * up(x)), or with a fused gate_up_proj, the first half of its output as gate.
class GatedMlp : public FeedForward {
public:
    GatedMlp(const std::string &typeName, int64_t hidden, int64_t inner, bool bias, std::string activation,
             const GatedNames &names = {});
    GatedMlp(const std::string &typeName, int64_t hidden, int64_t inner, std::string activation); // fused
    at::Tensor forward(const at::Tensor &x) override;
    // gate and up column-wise, down row-wise (tensorparallel.h; not the fused layout).
    void splitForTensorParallel(const TensorParallel &group);
    void gatherTensorParallel();

private:
    TensorParallel m_tensorParallel;
    Linear *m_gate = nullptr, *m_up = nullptr, *m_gateUp = nullptr, *m_down = nullptr;
    int64_t m_inner;
    std::string m_activation;
};

// Every expert's weights in two 3-D tensors (transformers 5's MixtralExperts / Qwen2MoeExperts).
class FusedExperts : public DeviceModule {
public:
    FusedExperts(const std::string &typeName, int64_t experts, int64_t hidden, int64_t inner, std::string activation);
    at::Tensor forward(int64_t expert, const at::Tensor &x);

private:
    Parameter *m_gateUp, *m_down;
    std::string m_activation;
};

// Routes each token to its top-k experts (softmax over the router's logits in float32, the top-k
// weights renormalised when normalizeTopK) and sums their outputs weighted; Qwen2-MoE adds the
// shared expert times sigmoid(shared_expert_gate(x)).
class SparseMoe : public FeedForward {
public:
    SparseMoe(const ModelConfig &config, const std::string &prefix);
    at::Tensor forward(const at::Tensor &x) override;

private:
    at::Tensor expert(int64_t index, const at::Tensor &x);
    Linear *m_router;
    std::vector<GatedMlp *> m_experts; // per-expert layout
    FusedExperts *m_fused = nullptr;   // fused layout
    GatedMlp *m_shared = nullptr;
    Linear *m_sharedGate = nullptr;
    int64_t m_topK;
    bool m_normalize, m_weightsInModelDtype;
};

// The feed-forward layer of `layer` and the local name it goes under ("mlp", Mixtral's
// "block_sparse_moe").
std::pair<std::string, std::unique_ptr<FeedForward>> makeFeedForward(const ModelConfig &config, int64_t layer);

} // namespace accel::inference
