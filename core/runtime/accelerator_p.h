// Private state of the Accelerator, shared by its implementation files (accelerator.cpp,
// rendezvous.cpp, preparation.cpp, training.cpp, acceleratorcollectives.cpp, checkpoint.cpp).
// Strategies (strategy/) and precision (precision/) never include it: they get what they need
// through StrategySetup and MixedPrecisionPolicy.
// Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/plan/shardingplan.h"
#include "core/runtime/accelerator.h"
#include "core/runtime/collectiverecord.h"
#include "core/runtime/metricswriter.h"
#include "core/runtime/precision/mixedprecisionpolicy.h"
#include "core/runtime/strategy/distributedstrategy.h"
#include "core/runtime/strategy/strategyfactory.h"
#include "core/runtime/training.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/torch.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace accel::runtime {

struct Accelerator::Private {
    DistributedEnv env;
    AcceleratorOptions options;
    int accumulationSteps = 1;
    torch::Device device = torch::kCPU;
    // Autocast, fp16 loss scaling and the FP8 recipe (precision/mixedprecisionpolicy.h).
    std::unique_ptr<MixedPrecisionPolicy> precision;
    c10::intrusive_ptr<c10d::Store> store;
    c10::intrusive_ptr<c10d::Backend> group; // null with one process

    // One prepared model and the strategy that keeps it across ranks.
    struct PreparedModel {
        std::shared_ptr<torch::nn::Module> module;
        std::unique_ptr<DistributedStrategy> strategy; // DdpStrategy or ShardingEngine (strategy/)
        bool trainable = false;                        // some parameter requires a gradient
        std::string name;                              // Accelerator::strategyName(index)
    };
    ShardingPlan plan;           // from the launcher's FSDP / DeepSpeed variables
    StrategySetup strategySetup; // what every model's strategy is made from (with the device mesh)
    std::unique_ptr<DistributedStrategy>
        firstStrategy; // made by create() (errors surface there), used by the first model
    // zero3_init_flag: the engine holding units built (wrapBuilt) once firstStrategy is taken.
    std::unique_ptr<DistributedStrategy> building;
    std::map<std::string, c10::intrusive_ptr<c10d::Backend>> subgroups; // mesh dimensions' sub-groups, by name
    std::vector<PreparedModel> models;
    std::vector<std::shared_ptr<ShardedModule>> offered;     // wrap()ed, not yet taken by a prepared model
    std::vector<const torch::nn::Module *> loadedEverywhere; // loadedOnEveryRank(), not yet prepared
    std::vector<std::shared_ptr<AcceleratedOptimizer>> optimizers;
    std::vector<std::vector<size_t>> optimizerModels; // per optimizer: the models whose parameters it steps
    std::vector<std::shared_ptr<AcceleratedScheduler>> schedulers;
    std::vector<std::weak_ptr<ShardedDataLoader>> loaders;

    int64_t step = 0;
    bool syncGradients = true;
    std::unique_ptr<MetricsWriter> metrics;
    std::optional<TrainingMemory> loggedMemory; // what logTrainingMemory() wrote last

    std::shared_ptr<ShardedDataLoader> activeLoader() const;
    // The models an optimizer steps (by index), and every model's index.
    const std::vector<size_t> &modelsOf(const AcceleratedOptimizer &optimizer) const;
    std::vector<size_t> allModels() const;
    // Finishes the gradients of `which`, unscales fp16 gradients and clips them together to one
    // global norm (one trained model: its strategy's own clipping). Returns the norm.
    double clip(const std::vector<size_t> &which, double maxNorm, double normType);
    // Checkpoints (checkpoint.cpp): what model `model`'s strategy saves with it, and whether an
    // optimizer's state is saved by its model's strategy (sharded folders) or as optimizer_<i>.bin.
    StateSlot stateSlot(size_t model) const;
    bool ownsOptimizerState(size_t optimizer) const;
    // Debug mode: compare shapes across ranks before a collective, fail readably on mismatch.
    void checkShapes(const torch::Tensor &tensor, const char *operation);
};

inline std::chrono::milliseconds toMs(double seconds)
{
    return std::chrono::milliseconds(int64_t(std::max(0.001, seconds) * 1000.0));
}

// Starts a collective and waits for it, recorded for the stack dump (collectiverecord.h).
template <typename F>
void runWork(CollectiveKind kind, F &&start)
{
    const std::uint64_t sequence = collectiveIssued(kind);
    c10::intrusive_ptr<c10d::Work> work = start();
    CollectiveWait waiting(kind, sequence);
    work->wait();
}

// rendezvous.cpp: joining the job and picking the device.
// A gloo group of `size` ranks meeting in `store`, on the interface the environment chose (also
// the sub-groups of the mesh's dimensions).
c10::intrusive_ptr<c10d::Backend> glooGroup(const Accelerator::Private &d, const c10::intrusive_ptr<c10d::Store> &store,
                                            int rank, int size);
// The group for this rank's device (NCCL on a GPU, else glooGroup): the world group and the
// sub-groups of the mesh's dimensions.
c10::intrusive_ptr<c10d::Backend> deviceGroup(const Accelerator::Private &d,
                                              const c10::intrusive_ptr<c10d::Store> &store, int rank, int size);
// The store (d.store) and the process group of every rank (d.group), or an error naming
// host:port and the missing ranks.
Result<void> rendezvous(Accelerator::Private &d);
// Why a rank computes on the CPU, for messages.
const char *cpuReason(const DistributedEnv &env);
// The device of this rank, as Accelerate's PartialState picks it.
Result<torch::Device> pickDevice(const DistributedEnv &env);

} // namespace accel::runtime
