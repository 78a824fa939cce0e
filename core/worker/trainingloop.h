// The training loop every built-in recipe shares: sharded batches, accumulation, clipping,
// warm-up + cosine schedule, evaluation, metrics lines, periodic checkpoints and resume.
#pragma once

#include "core/common/result.h"
#include "core/worker/jobspec.h"

#include <cstdint>
#include <functional>
#include <memory>
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
class Accelerator;
}

namespace accel::worker {

struct TrainingTask {
    int64_t datasetSize = 0;
    int64_t tokensPerSample = 0; // 0 = no tokens_per_s
    std::shared_ptr<torch::nn::Module> model;
    // Frozen models the loss also runs (a distillation teacher): prepared after `model`, without
    // an optimizer, checkpointed with it (model_1.safetensors, ...).
    std::vector<std::shared_ptr<torch::nn::Module>> referenceModels;
    torch::optim::Optimizer *optimizer = nullptr;
    // Forward + loss (fp32 scalar) for the samples of one batch; called inside autocast.
    std::function<at::Tensor(const std::vector<int64_t> &indices)> loss;
    // Mean evaluation loss over the whole evaluation set (same on every rank); optional.
    std::function<double()> evalLoss;
    // training.grad_clip's clipping when the model needs its own (tensor parallelism): returns the
    // norm; unset, the Accelerator's clipGradNorm.
    std::function<double(double maxNorm)> clipGradients;
    // Also log eval_perplexity = exp(eval_loss) (language models whose loss is per token).
    bool perplexity = false;
};

struct TrainingSummary {
    int64_t steps = 0; // optimizer steps completed (including resumed ones)
    int64_t resumedFrom = 0;
    double finalLoss = 0;
    double seconds = 0;
    double samplesPerSecond = 0; // global
    double tokensPerSecond = 0;
};

// lr multiplier: linear warm-up over warmupSteps optimizer steps, then cosine to minLrRatio.
double warmupCosine(int64_t step, int64_t warmupSteps, int64_t maxSteps, double minLrRatio);

Result<TrainingSummary> runTraining(runtime::Accelerator &accelerator, const JobSpec &job, TrainingTask &task);

} // namespace accel::worker
