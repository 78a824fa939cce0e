#include "core/inference/causallm.h"

#include "core/inference/gpt2model.h"
#include "core/inference/llamamodel.h"
#include "core/plan/tensorparallelrefusal.h"

namespace accel::inference {

std::pair<at::Tensor, at::Tensor> KVCache::append(size_t layer, const at::Tensor &k, const at::Tensor &v)
{
    if (m_layers.size() <= layer)
        m_layers.resize(layer + 1);
    Entry &e = m_layers[layer];
    const int64_t added = k.size(2);
    const int64_t needed = m_length + added;
    if (!e.keys.defined() || e.keys.size(2) < needed) {
        const int64_t capacity =
            std::max<int64_t>(needed, e.keys.defined() ? 2 * e.keys.size(2) : std::max<int64_t>(needed, 64));
        auto grow = [&](const at::Tensor &old, const at::Tensor &like) {
            auto fresh = at::empty({like.size(0), like.size(1), capacity, like.size(3)}, like.options());
            if (old.defined() && m_length > 0)
                fresh.narrow(2, 0, m_length).copy_(old.narrow(2, 0, m_length));
            return fresh;
        };
        e.keys = grow(e.keys, k);
        e.values = grow(e.values, v);
    }
    e.keys.narrow(2, m_length, added).copy_(k);
    e.values.narrow(2, m_length, added).copy_(v);
    return {e.keys.narrow(2, 0, needed), e.values.narrow(2, 0, needed)};
}

void KVCache::clear()
{
    m_layers.clear();
    m_length = 0;
}

Result<void> CausalLM::checkTensorParallel(int size) const
{
    runtime::TensorParallelModel model;
    model.modelType = m_config.modelType;
    model.hasPlan = false; // the families with a plan override this check
    return runtime::refuseTensorParallel(model, size, tensorParallelOptions().vocabParallel);
}

Result<std::unique_ptr<CausalLM>> createCausalLM(const ModelConfig &config)
{
    std::unique_ptr<CausalLM> model;
    switch (config.family) {
    case ModelFamily::Gpt2:
        model = std::make_unique<Gpt2Model>(config);
        break;
    case ModelFamily::Llama:
        model = std::make_unique<LlamaModel>(config);
        break;
    }
    if (!model)
        return makeError(ErrorCode::Unsupported, "model_type '" + config.modelType + "' has no C++ implementation");
    model->eval(); // inference; training switches it with train()
    return model;
}

} // namespace accel::inference
