#include "core/runtime/strategy/distributedstrategy.h"

#include <unordered_set>

namespace accel::runtime {

namespace {

class StorageCounter {
public:
    int64_t add(const torch::Tensor &tensor)
    {
        if (!tensor.defined() || !tensor.has_storage())
            return 0;
        const auto *storage = tensor.storage().unsafeGetStorageImpl();
        if (!m_seen.insert(storage).second)
            return 0;
        return int64_t(storage->nbytes());
    }

private:
    std::unordered_set<const void *> m_seen;
};

void addOptimizerState(TrainingMemory &memory, StorageCounter &counter, torch::optim::Optimizer &optimizer)
{
    for (const auto &[key, state] : optimizer.state()) {
        if (const auto *adamw = dynamic_cast<const torch::optim::AdamWParamState *>(state.get())) {
            for (const auto &t : {adamw->exp_avg(), adamw->exp_avg_sq(), adamw->max_exp_avg_sq()})
                memory.optimizerState += counter.add(t);
        } else if (const auto *adam = dynamic_cast<const torch::optim::AdamParamState *>(state.get())) {
            for (const auto &t : {adam->exp_avg(), adam->exp_avg_sq(), adam->max_exp_avg_sq()})
                memory.optimizerState += counter.add(t);
        } else if (const auto *sgd = dynamic_cast<const torch::optim::SGDParamState *>(state.get())) {
            memory.optimizerState += counter.add(sgd->momentum_buffer());
        }
    }
}

} // namespace

TrainingMemory measureTrainingMemory(const std::vector<torch::nn::Module *> &models,
                                     const std::vector<torch::optim::Optimizer *> &optimizers,
                                     const std::vector<torch::Tensor> &heldParameters)
{
    TrainingMemory memory;
    StorageCounter counter;
    for (auto *model : models) {
        for (const auto &p : model->parameters())
            memory.parameters += counter.add(p);
    }
    for (auto *model : models) {
        for (const auto &p : model->parameters())
            memory.gradients += counter.add(p.grad());
    }
    for (auto *optimizer : optimizers) {
        for (const auto &group : optimizer->param_groups()) {
            for (const auto &p : group.params()) {
                memory.parameters += counter.add(p);
                memory.gradients += counter.add(p.grad());
            }
        }
    }
    for (const auto &p : heldParameters)
        memory.parameters += counter.add(p);
    for (auto *optimizer : optimizers)
        addOptimizerState(memory, counter, *optimizer);
    return memory;
}

} // namespace accel::runtime
