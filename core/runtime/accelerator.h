// accel::runtime::Accelerator: Hugging Face Accelerate's training API in C++ on libtorch.
// Construct one per process from the environment a launcher exported (accel launch, accelerate
// launch, torchrun, mpirun); it joins the process group (c10d TCPStore rendezvous, gloo on CPU),
// prepares the model (broadcast from rank 0, bucketed gradient all-reduce overlapped with
// backward), the optimizer (skips steps while accumulating), the data loader (sharding) and the
// scheduler, and offers Accelerate's collectives and helpers.
//
// This header is torch-light (forward declarations) so programs can include it cheaply; the
// calls that take or return tensors are used from code that includes <torch/torch.h> anyway.
#pragma once

#include "core/common/result.h"
#include "core/plan/devicemesh.h"
#include "core/plan/trainingmemory.h"
#include "core/runtime/distributedenv.h"
#include "core/runtime/metricswriter.h"
#include "core/runtime/shardeddataloader.h"
#include "core/runtime/strategy/shardedmodule.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace at {
class Tensor;
}
namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}

namespace accel::runtime {

class AcceleratedOptimizer;
class AcceleratedScheduler;
class Collectives;
class MixedPrecisionPolicy;

struct ProjectOptions {
    std::string projectDir; // checkpoints/ goes under it with automatic naming
    bool automaticCheckpointNaming = false;
    int totalLimit = 0; // 0 = keep every checkpoint
    int iteration = 0;  // next checkpoint_<iteration>
};

struct AcceleratorOptions {
    int gradientAccumulationSteps = 1; // ACCELERATE_GRADIENT_ACCUMULATION_STEPS overrides it
    std::string mixedPrecision;        // "" = ACCELERATE_MIXED_PRECISION or "no"
    double rendezvousTimeoutS = 1800;  // store connection and all-ranks-present wait
    double collectiveTimeoutS = 1800;  // gloo operations
    double bucketCapMb = 25;           // gradient all-reduce bucket size
    bool syncWithDataLoader = true;    // sync gradients at the last batch of an epoch
    DataLoaderOptions data;
    ProjectOptions project;
};

enum class ReduceOp { Sum, Mean, Max };

// Turns autocast on for its lifetime when mixed precision is active: bf16 on CPU; bf16 or fp16 on CUDA.
class AutocastGuard {
public:
    explicit AutocastGuard(bool enable, bool cuda = false, bool fp16 = false);
    ~AutocastGuard();
    AutocastGuard(const AutocastGuard &) = delete;
    AutocastGuard &operator=(const AutocastGuard &) = delete;
    AutocastGuard(AutocastGuard &&other) noexcept;
    AutocastGuard &operator=(AutocastGuard &&) = delete;
    // Keeps a scope alive as long as the guard (FP8: precision/fp8training.h).
    void holdScope(std::shared_ptr<void> scope) { m_scope = std::move(scope); }

private:
    bool m_enabled = false;
    bool m_cuda = false;
    bool m_previous = false;
    int m_previousDtype = 0;
    std::shared_ptr<void> m_scope;
};

class Accelerator {
public:
    // Reads the environment, sets threads and joins the process group. Fails (never hangs
    // longer than rendezvousTimeoutS) with a message naming host, port and the missing ranks.
    static Result<std::unique_ptr<Accelerator>> create(const AcceleratorOptions &options = {});
    static Result<std::unique_ptr<Accelerator>> create(const AcceleratorOptions &options, const DistributedEnv &env);
    ~Accelerator();

    const DistributedEnv &env() const;
    int processIndex() const;
    int numProcesses() const;
    bool isMainProcess() const { return processIndex() == 0; }
    // How prepared gradients are summed across ranks: "shared-memory" (every rank on this host,
    // core/runtime/shmcollectives.h), "process-group" (gloo/NCCL), or "none" (one process).
    std::string gradientTransport() const;
    bool isLocalMainProcess() const;
    // Where this rank computes, as Accelerate picks it: "cuda:<LOCAL_RANK>" when libtorch has CUDA, a
    // GPU is visible (CUDA_VISIBLE_DEVICES, from gpu_ids) and ACCELERATE_USE_CPU is not set; else "cpu".
    // prepareModel() moves the model there; toDevice() moves a batch.
    std::string deviceName() const;
    bool onCuda() const;
    at::Tensor toDevice(const at::Tensor &tensor) const;
    // Bytes of device memory the caching allocator holds for tensors on this rank's GPU (-1 on CPU).
    double deviceMemoryBytes() const;
    // fp16's dynamic loss scale (GradScaler), 0 without fp16.
    double lossScale() const;
    MixedPrecision mixedPrecision() const;
    // The run's mixed precision: autocast, loss scaling, the FP8 recipe and what it converted
    // (core/runtime/precision/mixedprecisionpolicy.h).
    MixedPrecisionPolicy &precision() const;
    int gradientAccumulationSteps() const;
    const AcceleratorOptions &options() const;
    // The device mesh the strategies take their groups from (core/plan/devicemesh.h): with
    // parallelism_config tp_size the tp dimension, whose ranks read the same samples.
    const DeviceMesh &mesh() const;
    // This rank's group along `dim` (shared memory between ranks of this host, else gloo / NCCL),
    // for a model's own collectives (tensor parallelism). Every member calls it, in the same order.
    std::unique_ptr<Collectives> meshCollectives(MeshDim dim) const;

    // Sharded data parallel (docs/sharding.md): before prepareModel() of the model that holds it,
    // offer a module (a transformer block, or the model itself) as a unit and run its forward
    // through the holder. prepareModel(model) takes the offered modules inside `model`.
    std::shared_ptr<ShardedModule> wrap(const std::shared_ptr<torch::nn::Module> &module);
    // wrap() for a unit the program has just built (DeepSpeed's zero.Init): under ZeRO-3 with
    // zero3_init_flag the unit is sharded now (its parameters broadcast from rank 0, this rank
    // keeps its chunk, the whole storage freed), so a model built unit by unit is never whole on
    // any rank. Change a built unit's parameters (initialisation) inside holder->modify(). Else,
    // and under mixed precision fp8 (converted at prepareModel), the same as wrap().
    std::shared_ptr<ShardedModule> wrapBuilt(const std::shared_ptr<torch::nn::Module> &module);
    // A model every rank has loaded identically from the same files (each rank maps the same
    // checkpoint): prepareModel(model) does not broadcast it from rank 0, and under ZeRO-3 /
    // FULL_SHARD each unit is made from the part of its parameters this rank keeps, read straight
    // from the model's tensors, so no rank reads or holds the whole model (Accelerate's
    // cpu_ram_efficient_loading). Call before prepareModel(model).
    void loadedOnEveryRank(const std::shared_ptr<torch::nn::Module> &model);
    // Whether prepareModel() copies a trained model's parameters into the strategy's own buffers
    // (FSDP / ZeRO on more than one process), after which the model's original tensors are only read.
    bool strategyCopiesParameters() const;
    // The strategy the launcher's config chose: "DDP", "FULL_SHARD", "ZeRO-3", ...
    std::string strategyName() const;
    // What prepared model `index` runs under: the config's strategy for a trained model; for a
    // frozen one "<strategy> (frozen, sharded)" or "<strategy> (frozen, whole on every rank)".
    std::string strategyName(size_t index) const;
    size_t modelCount() const;
    // The end of sharded training (every rank): every model's parameters whole again, so one
    // rank may save them.
    void unshardModel();
    // This rank's bytes of parameters, gradients and optimizer state (every prepared model and
    // optimizer).
    TrainingMemory trainingMemory() const;
    // Writes trainingMemory() to this rank's metrics at `step` (mem_params_bytes, mem_grads_bytes,
    // mem_optim_bytes; docs/metrics.md) when it differs from the figures written last; nothing when
    // the metrics are off. Call it after prepare and after each optimizer step, before zeroGrad().
    void logTrainingMemory(int64_t step);

    // prepare(): broadcast the module's parameters and buffers from rank 0 and attach a strategy
    // of its own (gradient all-reduce, or sharding); wrap optimizer and scheduler (under ZeRO the
    // optimizer then steps this rank's shards); shard a data set of `datasetSize` samples.
    // Several models may be prepared (docs/sharding.md "Several models"): a model none of whose
    // parameters requires a gradient (a frozen reference) gets no gradient synchronisation and is
    // sharded for memory under ZeRO-3 / FULL_SHARD. Each optimizer steps one model's parameters
    // under a sharded strategy. Unsupported combinations throw std::invalid_argument naming them.
    void prepareModel(const std::shared_ptr<torch::nn::Module> &model);
    std::shared_ptr<AcceleratedOptimizer> prepareOptimizer(torch::optim::Optimizer &optimizer);
    std::shared_ptr<AcceleratedScheduler> prepareScheduler(std::function<double(int64_t)> lrLambda);
    Result<std::shared_ptr<ShardedDataLoader>> prepareDataLoader(int64_t datasetSize, int64_t batchSize, bool shuffle,
                                                                 bool dropLast = false);

    // Gradient accumulation: call accumulate() once per batch before forward; it decides
    // syncGradients() (every n-th batch, or the data loader's last batch).
    void accumulate();
    bool syncGradients() const;
    int64_t stepCounter() const; // Accelerate's `step` (batches seen modulo accumulation)
    // Divides by the accumulation steps, runs autograd and finishes the gradient all-reduce.
    void backward(const at::Tensor &loss);
    // Global gradient norm over every prepared model's parameters (one norm, as clip_grad_norm_
    // over all of them); clips to maxNorm. Returns the norm.
    double clipGradNorm(double maxNorm, double normType = 2.0);
    // The same over one prepared model's parameters.
    double clipGradNorm(const std::shared_ptr<torch::nn::Module> &model, double maxNorm, double normType = 2.0);
    AutocastGuard autocast() const;

    // Collectives (every rank must call them in the same order).
    at::Tensor gather(const at::Tensor &tensor);
    at::Tensor gatherForMetrics(const at::Tensor &tensor);
    at::Tensor padAcrossProcesses(const at::Tensor &tensor, int64_t dim = 0, double padIndex = 0,
                                  bool padFirst = false);
    at::Tensor reduce(const at::Tensor &tensor, ReduceOp op = ReduceOp::Sum);
    void broadcast(at::Tensor &tensor, int sourceRank = 0);
    void waitForEveryone();

    void setSeed(uint64_t seed);
    void print(const std::string &text) const; // main process only, to stdout

    // Checkpoints in Accelerate's folder layout, every prepared model and optimizer by its index
    // (model.safetensors, model_1.safetensors, optimizer.bin, optimizer_1.bin, ...; docs/jobs.md).
    Result<std::string> saveState(const std::string &outputDir = {});
    Result<void> loadState(const std::string &inputDir = {});

    // Metrics: one JSON line per call on every rank (docs/metrics.md). Opened lazily.
    MetricsWriter &metrics();

    struct Private; // accelerator_p.h, for the Accelerator's own implementation files

private:
    friend class AcceleratedOptimizer;
    explicit Accelerator(std::unique_ptr<Private> d);
    // AcceleratedOptimizer::step(): finishes and clips the gradients of the models the optimizer
    // steps, steps it (false: fp16 skipped the step) and lets the precision and strategies follow.
    bool stepOptimizer(AcceleratedOptimizer &optimizer);
    void zeroGradients(AcceleratedOptimizer &optimizer); // AcceleratedOptimizer::zeroGrad(): the strategies' part
    std::unique_ptr<Private> d;
};

} // namespace accel::runtime
