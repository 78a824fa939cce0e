// DistributedStrategy: how a prepared model's gradients, parameters and optimizer state are kept
// across ranks. The Accelerator holds exactly one: DdpStrategy (every rank whole, gradients
// all-reduced) or the ShardingEngine (ZeRO 1-3 and the FSDP strategies). The strategy decides
// which tensors the optimizer sees: the model's parameters for DDP, this rank's shards for ZeRO.
// Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/common/result.h"
#include "core/runtime/strategy/shardedmodule.h"
#include "core/runtime/strategy/trainingmemory.h"

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace accel::runtime {

// Measures a model's parameters and gradients and an optimizer's own tensors (its parameters
// when they are not the model's, e.g. ZeRO shards, their gradients and Adam/SGD state).
TrainingMemory measureTrainingMemory(torch::nn::Module &model, torch::optim::Optimizer *optimizer);

class DistributedStrategy {
public:
    virtual ~DistributedStrategy() = default;
    virtual std::string name() const = 0;
    // "shared-memory", "process-group" or "none" (one process).
    virtual std::string gradientTransport() const = 0;

    // Before prepareModel(): offer a module as a unit (a transformer block, or the model itself).
    virtual std::shared_ptr<ShardedModule> wrap(const std::shared_ptr<torch::nn::Module> &module)
    {
        return std::make_shared<ShardedModule>(module);
    }
    // After the parameters were broadcast from rank 0.
    virtual void prepareModel(const std::shared_ptr<torch::nn::Module> &model) = 0;
    // May replace the optimizer's parameters (ZeRO: by this rank's shards). Throws on a layout
    // it cannot shard, with a message naming it.
    virtual void prepareOptimizer(torch::optim::Optimizer &optimizer) {}

    virtual void setSyncEnabled(bool enabled) = 0; // false while accumulating
    virtual void afterBackward(bool sync) = 0;     // after every backward
    virtual void finishGradients() = 0;            // before clipping or the optimizer step
    virtual double clipGradNorm(double maxNorm, double normType) = 0;
    virtual void afterOptimizerStep() {}
    virtual void zeroGrad() {}
    // The end of sharded training (collective): every rank's parameters whole and the units
    // plain modules again, so one rank alone may save, print or sample the model.
    virtual void unshardModel() {}
    // Strategies whose ranks hold different parts write and read the model and optimizer state
    // themselves (every rank, inside Accelerator::saveState / loadState's folder).
    virtual bool savesOwnState() const { return false; }
    virtual Result<void> saveState(const std::string &folder, const std::vector<torch::optim::Optimizer *> &optimizers)
    {
        return {};
    }
    virtual Result<void> loadState(const std::string &folder, const std::vector<torch::optim::Optimizer *> &optimizers)
    {
        return {};
    }
};

} // namespace accel::runtime
