// MixedPrecisionPolicy: the run's mixed precision in one object (docs/fp8.md, docs/jobs.md) — the
// autocast dtype, fp16's dynamic loss scaling, and the FP8 recipe with its hooks. The Accelerator
// asks it at each step without knowing the recipe; the strategies ask it what the recipe needs from
// them: which gradients it reduces in its own format (MS-AMP's FP8 all-reduce under DDP), in which
// format a sharding engine gathers the converted weights (torchao's float8 all-gather under FSDP2).
// A new recipe is an Fp8Recipe (fp8recipe.h); neither the Accelerator nor a strategy changes.
// Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/common/result.h"
#include "core/plan/fp8config.h"
#include "core/plan/shardingplan.h"
#include "core/runtime/distributedenv.h"
#include "core/runtime/precision/fp8recipe.h"

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace accel::runtime {

class Collectives;
class Fp8GatheredWeights;
class Fp8Training;
class GradScaler;
class PrecisionGradientReduction;

// Weights a sharding engine all-gathers as FP8 codes, and who takes the gathered codes.
struct PrecisionWeightGather {
    std::vector<torch::Tensor> weights;
    Fp8GatheredWeights *target = nullptr;
};

class MixedPrecisionPolicy {
public:
    // `mode` on `device`; fp16 needs a GPU (`cpuReason` says why this rank computes on the CPU).
    static Result<std::unique_ptr<MixedPrecisionPolicy>> create(MixedPrecision mode, const torch::Device &device,
                                                                const std::string &cpuReason);
    ~MixedPrecisionPolicy();

    // Under mixed precision fp8: the recipe `config` asks for, or the reason it cannot run under
    // `plan` (which may gain notes) or on this device; never bf16 instead. Nothing otherwise.
    // `reduceMax` reduces the recipe's amaxes over every rank.
    Result<void> enableFp8(const Result<Fp8Config> &config, ShardingPlan &plan, ReduceMax reduceMax);

    MixedPrecision mode() const { return m_mode; }
    bool autocasts() const;        // bf16, fp16 or fp8: forward passes under autocast
    std::shared_ptr<void> scope(); // held with the autocast guard (FP8: converted layers run in FP8)
    double lossScale() const;      // fp16's dynamic loss scale, 0 without fp16
    bool scalesLoss() const { return m_scaler != nullptr; }
    torch::Tensor scaleLoss(const torch::Tensor &loss) const;
    void unscale(const std::vector<torch::Tensor> &parameters); // before clipping (fp16)
    // Runs `optimizer`'s step, unless fp16's scaler skips it (inf/NaN gradients); whether it ran.
    bool step(torch::optim::Optimizer &optimizer);

    // Whether models are converted at prepare (FP8: every Linear layer of the model, whole).
    bool convertsModels() const { return m_fp8 != nullptr; }
    // Throws std::invalid_argument when the precision cannot take prepared model `index`.
    void acceptModel(size_t index) const;
    // Converts the model (FP8), said by the rank that `reports`.
    void convertModel(const std::shared_ptr<torch::nn::Module> &model, bool report);
    // The optimizer the run steps for `optimizer` (the recipe's, or `optimizer` itself).
    torch::optim::Optimizer &prepareOptimizer(torch::optim::Optimizer &optimizer, bool report);
    int64_t optimizerStateBytes() const; // kept outside libtorch's optimizer state

    // What strategies ask. A data-parallel strategy over `group`: the recipe's own reduction of
    // some gradients, or null (every gradient in float). A sharding engine under `plan`: the
    // weights it gathers as FP8 codes (none: every weight in float).
    std::shared_ptr<PrecisionGradientReduction> gradientReduction(Collectives &group);
    PrecisionWeightGather weightGather(const ShardingPlan &plan) const;

    void afterBackward();
    void afterOptimizerStep();

    // Checkpoints: the recipe's scaling state in a file of its own (fp8_state.safetensors, rank 0),
    // loaded back or, if absent, said (by the rank that `reports`) to start afresh.
    Result<void> saveState(const std::string &folder) const;
    Result<void> loadState(const std::string &folder, bool report);

    // For tests and plugins: the FP8 training (null without fp8) and the gradient reduction handed
    // to a strategy (null if none).
    Fp8Training *fp8() const { return m_fp8.get(); }
    PrecisionGradientReduction *gradientReductionInUse() const { return m_reduction.get(); }

private:
    MixedPrecisionPolicy(MixedPrecision mode, const torch::Device &device);

    MixedPrecision m_mode;
    torch::Device m_device;
    std::unique_ptr<GradScaler> m_scaler;                 // fp16 only
    std::unique_ptr<Fp8Training> m_fp8;                   // mixed precision fp8 (docs/fp8.md)
    std::unique_ptr<torch::optim::Optimizer> m_optimizer; // the recipe's, in place of the prepared one
    std::shared_ptr<PrecisionGradientReduction> m_reduction;
};

} // namespace accel::runtime
