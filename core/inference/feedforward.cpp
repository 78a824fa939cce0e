#include "core/inference/feedforward.h"

#include "core/bigmodel/familytrees.h"

namespace accel::inference {

GatedMlp::GatedMlp(const std::string &typeName, int64_t hidden, int64_t inner, bool bias, std::string activation,
                   const GatedNames &names)
    : FeedForward(typeName), m_inner(inner), m_activation(std::move(activation))
{
    m_gate = addChild(names.gate, std::make_unique<Linear>(hidden, inner, bias));
    m_up = addChild(names.up, std::make_unique<Linear>(hidden, inner, bias));
    m_down = addChild(names.down, std::make_unique<Linear>(inner, hidden, bias));
}

GatedMlp::GatedMlp(const std::string &typeName, int64_t hidden, int64_t inner, std::string activation)
    : FeedForward(typeName), m_inner(inner), m_activation(std::move(activation))
{
    m_gateUp = addChild("gate_up_proj", std::make_unique<Linear>(hidden, 2 * inner, false));
    m_down = addChild("down_proj", std::make_unique<Linear>(inner, hidden, false));
}

at::Tensor GatedMlp::forward(const at::Tensor &x)
{
    ForwardScope scope(*this);
    if (m_gateUp) {
        auto both = m_gateUp->forward(x);
        return m_down->forward(both.narrow(-1, m_inner, m_inner) * activate(both.narrow(-1, 0, m_inner), m_activation));
    }
    const at::Tensor input = m_tensorParallel ? enterTensorParallel(toDevice(x), *m_tensorParallel) : x;
    return m_down->forward(activate(m_gate->forward(input), m_activation) * m_up->forward(input));
}

void GatedMlp::splitForTensorParallel(const TensorParallel &group)
{
    m_gate->splitForTensorParallel(TensorParallelStyle::Column, group);
    m_up->splitForTensorParallel(TensorParallelStyle::Column, group);
    m_down->splitForTensorParallel(TensorParallelStyle::Row, group);
    m_inner /= group->size;
    m_tensorParallel = group;
}

void GatedMlp::gatherTensorParallel()
{
    if (!m_tensorParallel)
        return;
    for (Linear *linear : {m_gate, m_up, m_down})
        linear->gatherTensorParallel();
    m_inner *= m_tensorParallel->size;
    m_tensorParallel.reset();
}

FusedExperts::FusedExperts(const std::string &typeName, int64_t experts, int64_t hidden, int64_t inner,
                           std::string activation)
    : DeviceModule(typeName), m_activation(std::move(activation))
{
    m_gateUp = addParameter("gate_up_proj", {experts, 2 * inner, hidden});
    m_down = addParameter("down_proj", {experts, hidden, inner});
}

at::Tensor FusedExperts::forward(int64_t expert, const at::Tensor &x)
{
    ForwardScope scope(*this);
    auto input = toDevice(x);
    auto both = at::linear(input, m_gateUp->value[expert]);
    const int64_t inner = both.size(-1) / 2;
    auto h = activate(both.narrow(-1, 0, inner), m_activation) * both.narrow(-1, inner, inner);
    return at::linear(h, m_down->value[expert]);
}

SparseMoe::SparseMoe(const ModelConfig &config, const std::string &prefix)
    : FeedForward(prefix + "SparseMoeBlock"), m_topK(config.moe.expertsPerToken), m_normalize(config.moe.normalizeTopK),
      m_weightsInModelDtype(config.modelType == "qwen2_moe")
{
    const int64_t hidden = config.hiddenSize, inner = config.moe.expertSize, count = config.moe.experts;
    const bool mixtral = config.modelType == "mixtral";
    m_router = addChild("gate", std::make_unique<Linear>(hidden, count, false));
    if (config.moe.fused) {
        m_fused = addChild("experts",
                           std::make_unique<FusedExperts>(prefix + "Experts", count, hidden, inner, config.activation));
    } else {
        auto experts = std::make_unique<Container>("ModuleList");
        GatedNames names;
        if (mixtral)
            names = {"w1", "w3", "w2"};
        const std::string expertType = mixtral ? "MixtralBlockSparseTop2MLP" : prefix + "MLP";
        for (int64_t e = 0; e < count; ++e)
            m_experts.push_back(
                experts->add(std::to_string(e),
                             std::make_unique<GatedMlp>(expertType, hidden, inner, false, config.activation, names)));
        addChild("experts", std::move(experts));
    }
    if (config.moe.sharedExpertSize > 0 && !mixtral) {
        m_shared =
            addChild("shared_expert", std::make_unique<GatedMlp>(prefix + "MLP", hidden, config.moe.sharedExpertSize,
                                                                 false, config.activation));
        m_sharedGate = addChild("shared_expert_gate", std::make_unique<Linear>(hidden, 1, false));
    }
}

at::Tensor SparseMoe::expert(int64_t index, const at::Tensor &x)
{
    return m_fused ? m_fused->forward(index, x) : m_experts[static_cast<size_t>(index)]->forward(x);
}

at::Tensor SparseMoe::forward(const at::Tensor &x)
{
    ForwardScope scope(*this);
    auto input = toDevice(x);
    const auto shape = input.sizes().vec();
    auto flat = input.reshape({-1, shape.back()});
    auto logits = m_router->forward(flat);
    auto probabilities = at::softmax(logits.to(at::kFloat), -1);
    auto [weights, chosen] = at::topk(probabilities, m_topK, -1);
    if (m_normalize)
        weights = weights / weights.sum(-1, /*keepdim=*/true);
    if (m_weightsInModelDtype)
        weights = weights.to(logits.scalar_type());
    auto out = at::zeros_like(flat);
    // Experts in ascending order, each over the tokens that chose it (transformers' loop).
    const auto chosenCpu = chosen.to(at::kCPU).contiguous();
    const int64_t tokens = flat.size(0);
    const int64_t *ids = chosenCpu.data_ptr<int64_t>();
    std::vector<std::vector<std::pair<int64_t, int64_t>>> byExpert; // (slot, token) in transformers' order
    for (int64_t slot = 0; slot < m_topK; ++slot)
        for (int64_t t = 0; t < tokens; ++t) {
            const int64_t e = ids[t * m_topK + slot];
            if (static_cast<size_t>(e) >= byExpert.size())
                byExpert.resize(static_cast<size_t>(e) + 1);
            byExpert[static_cast<size_t>(e)].emplace_back(slot, t);
        }
    for (size_t e = 0; e < byExpert.size(); ++e) {
        if (byExpert[e].empty())
            continue;
        std::vector<int64_t> slots, rows;
        for (const auto &[slot, t] : byExpert[e]) {
            slots.push_back(slot);
            rows.push_back(t);
        }
        const auto rowIndex = at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(flat.device());
        const auto slotIndex = at::tensor(slots, at::TensorOptions().dtype(at::kLong)).to(flat.device());
        auto result = expert(static_cast<int64_t>(e), flat.index_select(0, rowIndex)).to(flat.device());
        auto weight = weights.index_select(0, rowIndex).gather(1, slotIndex.unsqueeze(1));
        out = out.index_add(0, rowIndex, (result * weight).to(out.scalar_type()));
    }
    if (m_shared) {
        auto shared = m_shared->forward(flat).to(flat.device());
        out = out + at::sigmoid(m_sharedGate->forward(flat)).to(flat.device()) * shared;
    }
    return out.view(shape);
}

std::pair<std::string, std::unique_ptr<FeedForward>> makeFeedForward(const ModelConfig &config, int64_t layer)
{
    const std::string prefix = bigmodel::familyClassPrefix(config.modelType);
    if (config.moe.experts > 0 && config.moe.sparseAt(layer)) {
        // Mixtral's per-expert checkpoints (the Hub's, and what transformers 5 saves) keep the
        // block under block_sparse_moe; its fused layout and Qwen2-MoE use mlp.
        const bool legacyName = config.modelType == "mixtral" && !config.moe.fused;
        return {legacyName ? "block_sparse_moe" : "mlp", std::make_unique<SparseMoe>(config, prefix)};
    }
    if (config.fusedGateUp)
        return {"mlp", std::make_unique<GatedMlp>(prefix + "MLP", config.hiddenSize, config.intermediateSize,
                                                  config.activation)};
    return {"mlp", std::make_unique<GatedMlp>(prefix + "MLP", config.hiddenSize, config.intermediateSize,
                                              config.mlpBias, config.activation)};
}

} // namespace accel::inference
