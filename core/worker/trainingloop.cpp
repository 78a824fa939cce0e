#include "core/worker/trainingloop.h"

#include "core/common/checkpointnames.h"
#include "core/runtime/accelerator.h"
#include "core/runtime/precision/fp8gemm.h"
#include "core/runtime/training.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace accel::worker {

namespace fs = std::filesystem;
using runtime::Accelerator;
using runtime::ReduceOp;

namespace {

std::string fixed(double value, int digits)
{
    std::ostringstream out;
    out.setf(std::ios::fixed);
    out.precision(digits);
    out << value;
    return out.str();
}

// A deliberate hang for the hang autopsy's tests (docs/hang-autopsy.md):
// ACCEL_FAULT_EXTRA_BARRIER=RANK:STEP makes rank RANK wait in one barrier the other ranks never
// enter, after optimizer step STEP, so it waits in barrier #n while the others wait in the next
// all_reduce #n. Unset: no fault. A value that is not two whole numbers is an error naming it.
constexpr const char *kExtraBarrierVariable = "ACCEL_FAULT_EXTRA_BARRIER";

struct ExtraBarrier {
    int rank = -1;
    int64_t step = -1;
};

Result<ExtraBarrier> extraBarrierFault()
{
    const char *value = std::getenv(kExtraBarrierVariable);
    ExtraBarrier fault;
    if (!value || !*value)
        return fault;
    char tail = 0;
    long long step = 0;
    if (std::sscanf(value, "%d:%lld%c", &fault.rank, &step, &tail) != 2 || fault.rank < 0 || step < 1)
        return makeError(ErrorCode::InvalidInput,
                         std::string(kExtraBarrierVariable) + ": expected RANK:STEP (e.g. 1:3), got '" + value + "'");
    fault.step = step;
    return fault;
}

} // namespace

double warmupCosine(int64_t step, int64_t warmupSteps, int64_t maxSteps, double minLrRatio)
{
    if (warmupSteps > 0 && step < warmupSteps)
        return double(step + 1) / double(warmupSteps);
    const double span = double(std::max<int64_t>(1, maxSteps - warmupSteps));
    const double progress = std::min(1.0, double(step - warmupSteps) / span);
    return minLrRatio + (1.0 - minLrRatio) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

Result<TrainingSummary> runTraining(Accelerator &accelerator, const JobSpec &job, TrainingTask &task)
{
    const TrainingSettings &t = job.training;
    const auto fault = extraBarrierFault();
    if (!fault)
        return tl::unexpected(fault.error());
    accelerator.prepareModel(task.model);
    for (const auto &reference : task.referenceModels)
        accelerator.prepareModel(reference);
    if (accelerator.modelCount() > 1) {
        std::string text = "models:";
        for (size_t i = 0; i < accelerator.modelCount(); ++i)
            text += (i ? "; " : " ") + std::to_string(i) + " " + accelerator.strategyName(i);
        accelerator.print(text);
    }
    auto optimizer = accelerator.prepareOptimizer(*task.optimizer);
    // Accelerate steps the scheduler numProcesses() times per optimizer step (batches not split):
    // the lambda works in optimizer steps.
    const int64_t perStep = accelerator.options().data.splitBatches ? 1 : accelerator.numProcesses();
    auto scheduler = accelerator.prepareScheduler([&t, perStep](int64_t schedulerStep) {
        return warmupCosine(schedulerStep / perStep, t.warmupSteps, t.maxSteps, t.minLrRatio);
    });
    auto loader = accelerator.prepareDataLoader(task.datasetSize, t.batchSize, t.shuffle, false);
    if (!loader)
        return tl::unexpected(loader.error());

    TrainingSummary summary;
    int64_t epoch = 0, skip = 0;
    const fs::path checkpoints = fs::path(job.outputDir) / "checkpoints";
    auto latestFound = checkpointnames::latestCheckpointNumber(checkpoints.string());
    if (!latestFound)
        return tl::unexpected(latestFound.error());
    const int latest = *latestFound;
    if (t.resume != "none" && (t.resume != "auto" || latest >= 0)) {
        auto loaded = accelerator.loadState(t.resume == "auto" ? std::string() : t.resume);
        if (!loaded)
            return tl::unexpected(loaded.error());
        summary.resumedFrom = scheduler->lastStep() / perStep;
        epoch = (*loader)->resumeEpoch();
        skip = (*loader)->resumeSkip();
        accelerator.print(
            "resumed from step " + std::to_string(summary.resumedFrom) + " (" +
            (t.resume == "auto" ? (checkpoints / ("checkpoint_" + std::to_string(latest))).string() : t.resume) + ")");
    }
    summary.steps = summary.resumedFrom;
    accelerator.logTrainingMemory(summary.steps); // as prepared (and resumed)

    auto &metrics = accelerator.metrics();
    const auto start = std::chrono::steady_clock::now();
    auto windowStart = start;
    int64_t windowSamples = 0, totalSamples = 0;
    double lastLoss = 0;
    while (summary.steps < t.maxSteps) {
        if ((*loader)->length() == 0)
            return makeError(ErrorCode::InvalidInput, "the data set has no batch for this rank", job.path);
        (*loader)->beginEpoch(epoch, skip);
        skip = 0;
        while (summary.steps < t.maxSteps) {
            auto batch = (*loader)->next();
            if (!batch)
                break;
            accelerator.accumulate();
            torch::Tensor loss;
            {
                auto autocast = accelerator.autocast();
                loss = task.loss(*batch);
            }
            accelerator.backward(loss);
            windowSamples += int64_t(batch->size());
            if (!accelerator.syncGradients())
                continue;
            double gradNorm = NAN;
            if (t.gradClip > 0)
                gradNorm = task.clipGradients ? task.clipGradients(t.gradClip) : accelerator.clipGradNorm(t.gradClip);
            const double lr = optimizer->lr();
            optimizer->step();
            scheduler->step();
            accelerator.logTrainingMemory(summary.steps + 1); // gradients are still held here
            optimizer->zeroGrad();
            ++summary.steps;
            const bool logNow = summary.steps % t.logEvery == 0 || summary.steps == t.maxSteps;
            if (logNow) {
                lastLoss =
                    accelerator.reduce(loss.detach().to(torch::kFloat).reshape({1}), ReduceOp::Mean).item<double>();
                const auto now = std::chrono::steady_clock::now();
                const double seconds = std::chrono::duration<double>(now - windowStart).count();
                const int64_t steps = std::min<int64_t>(t.logEvery, summary.steps - summary.resumedFrom);
                // Global samples: the ranks of one tp group read the same ones.
                const double samplesPerS =
                    double(windowSamples * accelerator.mesh().dataParallelSize()) / std::max(seconds, 1e-9);
                runtime::MetricsWriter::Values values{{"loss", lastLoss},
                                                      {"lr", lr},
                                                      {"samples_per_s", samplesPerS},
                                                      {"step_time_s", seconds / double(std::max<int64_t>(1, steps))},
                                                      {"epoch", double(epoch)},
                                                      {"mem_rss_bytes", runtime::MetricsWriter::residentBytes()}};
                if (!std::isnan(gradNorm))
                    values.push_back({"grad_norm", gradNorm});
                if (const double device = accelerator.deviceMemoryBytes(); device >= 0)
                    values.push_back({"mem_device_bytes", device});
                if (const double scale = accelerator.lossScale(); scale > 0)
                    values.push_back({"loss_scale", scale});
                if (task.tokensPerSample > 0)
                    values.push_back({"tokens_per_s", samplesPerS * double(task.tokensPerSample)});
                // Which kernel the FP8 GEMMs ran on since the last line (docs/fp8.md "The GEMM").
                if (const auto gemms = runtime::takeFp8GemmCounts(); gemms.scaledMm + gemms.dequantized > 0) {
                    values.push_back({"fp8_gemm_scaled_mm", double(gemms.scaledMm)});
                    values.push_back({"fp8_gemm_dequantized", double(gemms.dequantized)});
                }
                metrics.log(summary.steps, values);
                accelerator.print("step " + std::to_string(summary.steps) + "/" + std::to_string(t.maxSteps) +
                                  "  loss " + fixed(lastLoss, 4) + "  lr " + fixed(lr * 1e3, 4) + "e-3  " +
                                  fixed(samplesPerS, 1) + " samples/s" +
                                  (task.tokensPerSample > 0
                                       ? "  " + fixed(samplesPerS * double(task.tokensPerSample), 0) + " tokens/s"
                                       : ""));
                totalSamples += windowSamples;
                windowSamples = 0;
                windowStart = now;
            }
            if (task.evalLoss && t.evalEvery > 0 && (summary.steps % t.evalEvery == 0 || summary.steps == t.maxSteps)) {
                torch::NoGradGuard noGrad;
                task.model->eval();
                const double evalLoss = task.evalLoss();
                task.model->train();
                runtime::MetricsWriter::Values values{{"eval_loss", evalLoss}};
                if (task.perplexity)
                    values.push_back({"eval_perplexity", std::exp(evalLoss)});
                metrics.log(summary.steps, values, "eval");
                accelerator.print("step " + std::to_string(summary.steps) + "  eval_loss " + fixed(evalLoss, 4) +
                                  (task.perplexity ? "  eval_perplexity " + fixed(std::exp(evalLoss), 2) : ""));
            }
            const bool checkpointNow = (t.checkpointEvery > 0 && summary.steps % t.checkpointEvery == 0) ||
                                       (t.checkpointAtEnd && summary.steps == t.maxSteps);
            if (checkpointNow) {
                auto saved = accelerator.saveState();
                if (!saved)
                    return tl::unexpected(saved.error());
                accelerator.print("saved " + *saved);
            }
            if (summary.steps == fault->step && accelerator.processIndex() == fault->rank)
                accelerator.waitForEveryone(); // the deliberate hang (extraBarrierFault)
        }
        ++epoch;
    }
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    totalSamples += windowSamples;
    summary.samplesPerSecond =
        double(totalSamples * accelerator.mesh().dataParallelSize()) / std::max(summary.seconds, 1e-9);
    summary.tokensPerSecond = summary.samplesPerSecond * double(task.tokensPerSample);
    summary.finalLoss = lastLoss;
    return summary;
}

} // namespace accel::worker
