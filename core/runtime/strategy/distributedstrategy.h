// DistributedStrategy: how one prepared model's gradients, parameters and optimizer state are kept
// across ranks. The Accelerator holds one per prepared model: DdpStrategy (every rank whole,
// gradients all-reduced; a frozen model whole without any synchronisation) or the ShardingEngine
// (ZeRO 1-3 and the FSDP strategies). The strategy decides which tensors the optimizer sees: the
// model's parameters for DDP, this rank's shards for ZeRO.
// Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/common/result.h"
#include "core/plan/trainingmemory.h"
#include "core/runtime/strategy/shardedmodule.h"

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace accel::runtime {

// Measures the models' parameters and gradients, the tensors the strategies hold for them (ZeRO
// shards), and the optimizers' own tensors (their parameters when they are not the models', their
// gradients and Adam/SGD state). A storage shared by several of them counts once.
TrainingMemory measureTrainingMemory(const std::vector<torch::nn::Module *> &models,
                                     const std::vector<torch::optim::Optimizer *> &optimizers,
                                     const std::vector<torch::Tensor> &heldParameters = {});

// What a strategy saves or loads for its model: the model's index among the prepared models (its
// file names: model.safetensors / model_<i>.safetensors, pytorch_model_fsdp_<i>/) and the
// prepared optimizers that step it, each with its index (optimizer_<o>/); with tensor parallelism
// the model's split (tensorparallellayout.h: saved whole, loaded as this rank's part).
struct TensorParallelLayout;
struct StateSlot {
    size_t model = 0;
    std::vector<std::pair<size_t, torch::optim::Optimizer *>> optimizers;
    const TensorParallelLayout *tensorParallel = nullptr;
};

class DistributedStrategy {
public:
    virtual ~DistributedStrategy() = default;
    virtual std::string name() const = 0;
    // "shared-memory", "process-group" or "none" (one process).
    virtual std::string gradientTransport() const = 0;

    // After the parameters were broadcast from rank 0. `units`: the holders Accelerator::wrap()
    // returned for modules of this model (transformer blocks, or the model itself), in offer order.
    virtual void prepareModel(const std::shared_ptr<torch::nn::Module> &model,
                              const std::vector<std::shared_ptr<ShardedModule>> &units) = 0;
    // May replace the optimizer's parameters (ZeRO: by this rank's shards). Throws on a layout
    // it cannot shard, with a message naming it.
    virtual void prepareOptimizer(torch::optim::Optimizer &optimizer) {}

    virtual void setSyncEnabled(bool enabled) = 0; // false while accumulating
    virtual void afterBackward(bool sync) = 0;     // after every backward
    virtual void finishGradients() = 0;            // before clipping or the optimizer step
    virtual double clipGradNorm(double maxNorm, double normType) = 0;
    // Several models clipped together: this model's share of the global norm (the sum over its
    // gradients of |g|^p, already combined across ranks; the largest |g| for p = inf), then the
    // factor every gradient is multiplied by.
    virtual double gradientNormPart(double normType) = 0;
    virtual void scaleGradients(double factor) = 0;
    virtual void afterOptimizerStep() {}
    virtual void zeroGrad() {}
    // The end of sharded training (collective): every rank's parameters whole and the units
    // plain modules again, so one rank alone may save, print or sample the model.
    virtual void unshardModel() {}
    // Whether some of the model's parameters exist only as this rank's shard (ZeRO-3 units).
    virtual bool shardsParameters() const { return false; }
    // Tensors the strategy keeps besides the model's parameters (shards, flat buffers).
    virtual std::vector<torch::Tensor> heldParameters() const { return {}; }
    // Strategies whose ranks hold different parts write and read the model and optimizer state
    // themselves (every rank, inside Accelerator::saveState / loadState's folder).
    virtual bool savesOwnState() const { return false; }
    virtual Result<void> saveState(const std::string &folder, const StateSlot &slot) { return {}; }
    virtual Result<void> loadState(const std::string &folder, const StateSlot &slot) { return {}; }
};

} // namespace accel::runtime
