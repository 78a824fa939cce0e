// Accelerator::prepare*(): models (with their strategy), optimizers, schedulers and data loaders;
// gradient accumulation, backward and clipping; the optimizer and scheduler wrappers.
#include "core/runtime/accelerator_p.h"

#include <iostream>

namespace accel::runtime {

// FP8: which Linear layers were converted and which stay in high precision (and why).
static void reportFp8Conversion(const Fp8Training &fp8, const Fp8Training::Conversion &conversion, int rank)
{
    if (rank != 0)
        return;
    int64_t weights = 0;
    for (const auto &weight : fp8.convertedWeights())
        weights += weight.numel();
    std::string text = fp8.recipe().config().describe() + ": converted " + std::to_string(conversion.converted.size()) +
                       " of " + std::to_string(conversion.converted.size() + conversion.kept.size()) +
                       " Linear layers (" + std::to_string(weights) + " weights)";
    for (size_t i = 0; i < conversion.converted.size(); ++i)
        text += (i ? ", " : ": ") + conversion.converted[i];
    for (size_t i = 0; i < conversion.kept.size(); ++i)
        text += (i ? "; " : "; kept: ") + conversion.kept[i].first + " (" + conversion.kept[i].second + ")";
    std::cout << text << std::endl;
}

std::shared_ptr<ShardedModule> Accelerator::wrap(const std::shared_ptr<torch::nn::Module> &module)
{
    return d->strategy->wrap(module);
}

void Accelerator::unshardModel()
{
    d->strategy->unshardModel();
}

TrainingMemory Accelerator::trainingMemory() const
{
    TrainingMemory memory;
    if (!d->model)
        return memory;
    if (d->optimizers.empty())
        return measureTrainingMemory(*d->model, nullptr);
    for (size_t i = 0; i < d->optimizers.size(); ++i) {
        // Storages shared between optimizers and the model count once: measure all at once.
        const TrainingMemory part = measureTrainingMemory(*d->model, &d->optimizers[i]->optimizer());
        memory.optimizerState += part.optimizerState;
        if (i == 0) {
            memory.parameters = part.parameters;
            memory.gradients = part.gradients;
        }
    }
    return memory;
}

void Accelerator::prepareModel(const std::shared_ptr<torch::nn::Module> &model)
{
    d->model = model;
    if (!d->device.is_cpu())
        model->to(d->device);
    if (d->fp8)
        reportFp8Conversion(*d->fp8, d->fp8->convert(model), d->env.rank);
    if (d->group) {
        torch::NoGradGuard noGrad;
        for (auto &tensor : model->parameters())
            broadcast(tensor, 0);
        for (auto &tensor : model->buffers())
            broadcast(tensor, 0);
    }
    d->strategy->prepareModel(model);
}

std::shared_ptr<AcceleratedOptimizer> Accelerator::prepareOptimizer(torch::optim::Optimizer &optimizer)
{
    torch::optim::Optimizer *target = &optimizer;
    if (d->fp8 && d->fp8->recipe().config().backend == Fp8Backend::MsAmp) {
        // MS-AMP replaces the optimizer (Adam/AdamW only) by its low-bit one, as msamp.initialize does.
        if (d->fp8Optimizer)
            throw std::invalid_argument("fp8 MS-AMP: prepare exactly one optimizer");
        d->fp8Optimizer = std::make_unique<MsAmpAdamW>(optimizer, d->fp8->recipe().config().optLevel);
        target = d->fp8Optimizer.get();
    }
    d->strategy->prepareOptimizer(*target); // ZeRO: the optimizer now steps this rank's shards
    auto prepared = std::make_shared<AcceleratedOptimizer>(*this, *target);
    d->optimizers.push_back(prepared);
    return prepared;
}

std::shared_ptr<AcceleratedScheduler> Accelerator::prepareScheduler(std::function<double(int64_t)> lrLambda)
{
    if (d->optimizers.empty())
        throw std::logic_error("prepareScheduler: prepare an optimizer first");
    auto prepared = std::make_shared<AcceleratedScheduler>(*this, *d->optimizers.back(), std::move(lrLambda));
    d->schedulers.push_back(prepared);
    return prepared;
}

Result<std::shared_ptr<ShardedDataLoader>> Accelerator::prepareDataLoader(int64_t datasetSize, int64_t batchSize,
                                                                          bool shuffle, bool dropLast)
{
    auto loader = ShardedDataLoader::create(datasetSize, batchSize, shuffle, dropLast, d->env.rank, d->env.worldSize,
                                            d->options.data);
    if (loader)
        d->loaders.push_back(*loader);
    return loader;
}

void Accelerator::accumulate()
{
    ++d->step;
    auto loader = d->activeLoader();
    if (d->options.syncWithDataLoader && loader && loader->endOfDataLoader()) {
        d->step = 0;
        d->syncGradients = true;
    } else {
        d->syncGradients = d->step % d->accumulationSteps == 0;
    }
    d->strategy->setSyncEnabled(d->syncGradients);
}

void Accelerator::backward(const at::Tensor &lossIn)
{
    const torch::Tensor loss = d->scaler ? d->scaler->scale(lossIn) : lossIn;
    if (d->accumulationSteps > 1)
        (loss / double(d->accumulationSteps)).backward();
    else
        loss.backward();
    d->strategy->afterBackward(d->syncGradients);
    if (d->fp8)
        d->fp8->afterBackward();
}

double Accelerator::clipGradNorm(double maxNorm, double normType)
{
    if (!d->model)
        throw std::logic_error("clipGradNorm: prepare a model first");
    d->strategy->finishGradients();
    if (d->scaler) // clip the true gradients, as Accelerate's clip_grad_norm_ unscales first
        d->scaler->unscale(d->model->parameters());
    return d->strategy->clipGradNorm(maxNorm, normType);
}

AutocastGuard Accelerator::autocast() const
{
    AutocastGuard guard(d->precision == MixedPrecision::Bf16 || d->precision == MixedPrecision::Fp8 ||
                            d->precision == MixedPrecision::Fp16,
                        d->device.is_cuda(), d->precision == MixedPrecision::Fp16);
    if (d->fp8)
        guard.holdScope(std::make_shared<Fp8Training::Scope>(d->fp8->scope()));
    return guard;
}

} // namespace accel::runtime
