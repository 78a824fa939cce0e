// Accelerator::prepare*(): models (with their strategy), optimizers, schedulers and data loaders;
// gradient accumulation, backward and clipping; the optimizer and scheduler wrappers.
#include "core/runtime/accelerator_p.h"
#include "core/runtime/strategy/shardingengine.h"
#include "core/runtime/strategy/strategyfactory.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <unordered_set>

namespace accel::runtime {

namespace {

bool contains(const std::shared_ptr<torch::nn::Module> &model, const torch::nn::Module *module)
{
    if (model.get() == module)
        return true;
    for (const auto &inner : model->modules(/*include_self=*/false)) {
        if (inner.get() == module)
            return true;
    }
    return false;
}

ShardingEngine *engineOf(const std::unique_ptr<DistributedStrategy> &strategy)
{
    return dynamic_cast<ShardingEngine *>(strategy.get());
}

// Whether `engine` holds units built (zero3_init_flag) of a model other than `model`, or of `model`.
bool holdsBuiltUnitsOf(const ShardingEngine *engine, const std::shared_ptr<torch::nn::Module> &model, bool other)
{
    if (!engine || engine->builtUnits().empty())
        return false;
    return contains(model, engine->builtUnits().front()->module().get()) != other;
}

std::string joinIndices(const std::vector<size_t> &indices)
{
    std::string text;
    for (size_t i = 0; i < indices.size(); ++i)
        text += (i == 0 ? "" : i + 1 == indices.size() ? " and " : ", ") + std::to_string(indices[i]);
    return text;
}

// zero3_init_flag: how model `index` was built, said on rank 0.
void noteZero3Init(const ShardingEngine &engine, const torch::nn::Module &model, size_t index, bool fp8)
{
    int64_t built = 0, total = 0;
    for (const auto &p : engine.builtParameters())
        built += p.numel();
    for (const auto &p : model.parameters())
        total += p.numel();
    std::string text = "zero3_init_flag: model " + std::to_string(index) + ": ";
    if (built == 0)
        text += std::string("built whole on every rank, then sharded at prepare (") +
                (fp8 ? "mixed precision fp8 converts the whole model's Linear layers at prepare"
                     : "no unit was built with Accelerator::wrapBuilt()") +
                ")";
    else
        text += std::to_string(engine.builtUnits().size()) + " units sharded as they were built (" +
                std::to_string(built) + " of " + std::to_string(total) + " parameters; the other " +
                std::to_string(total - built) + " were whole on every rank until prepare)";
    std::cerr << "note: " << text << std::endl;
}

} // namespace

std::shared_ptr<ShardedModule> Accelerator::wrap(const std::shared_ptr<torch::nn::Module> &module)
{
    for (size_t i = 0; i < d->models.size(); ++i) {
        if (contains(d->models[i].module, module.get()))
            throw std::logic_error("Accelerator::wrap: the module belongs to model " + std::to_string(i) +
                                   ", prepared already; wrap units before prepareModel()");
    }
    auto holder = std::make_shared<ShardedModule>(module);
    d->offered.push_back(holder);
    return holder;
}

std::shared_ptr<ShardedModule> Accelerator::wrapBuilt(const std::shared_ptr<torch::nn::Module> &module)
{
    auto holder = wrap(module);
    // Models the precision converts at prepareModel (FP8's Linear layers) are built whole (noted there).
    if (!d->plan.zero3Init || !d->group || d->precision->convertsModels())
        return holder;
    if (!d->firstStrategy && !d->building)
        d->building = makeStrategy(d->strategySetup);
    ShardingEngine *engine = engineOf(d->firstStrategy ? d->firstStrategy : d->building);
    if (!engine)
        return holder;
    engine->setBroadcast([this](torch::Tensor &tensor) { broadcast(tensor, 0); });
    engine->buildUnit(holder);
    return holder;
}

void Accelerator::loadedOnEveryRank(const std::shared_ptr<torch::nn::Module> &model)
{
    for (const auto &prepared : d->models) {
        if (prepared.module == model)
            throw std::logic_error("Accelerator::loadedOnEveryRank: the model is prepared already");
    }
    d->loadedEverywhere.push_back(model.get());
}

bool Accelerator::strategyCopiesParameters() const
{
    return d->group && d->plan.sharded();
}

void Accelerator::unshardModel()
{
    for (auto &model : d->models)
        model.strategy->unshardModel();
}

TrainingMemory Accelerator::trainingMemory() const
{
    if (d->models.empty())
        return {};
    std::vector<torch::nn::Module *> models;
    std::vector<torch::Tensor> held;
    for (const auto &model : d->models) {
        models.push_back(model.module.get());
        for (auto &tensor : model.strategy->heldParameters())
            held.push_back(std::move(tensor));
    }
    std::vector<torch::optim::Optimizer *> optimizers;
    for (const auto &optimizer : d->optimizers)
        optimizers.push_back(&optimizer->optimizer());
    // Storages shared between models, strategies and optimizers count once: measured all at once.
    TrainingMemory memory = measureTrainingMemory(models, optimizers, held);
    // A precision recipe's optimizer may keep state outside libtorch's (MS-AMP's low-bit moments).
    memory.optimizerState += d->precision->optimizerStateBytes();
    return memory;
}

void Accelerator::logTrainingMemory(int64_t step)
{
    if (!metrics().enabled())
        return;
    const TrainingMemory memory = trainingMemory();
    const auto &last = d->loggedMemory;
    if (last && last->parameters == memory.parameters && last->gradients == memory.gradients &&
        last->optimizerState == memory.optimizerState)
        return;
    d->loggedMemory = memory;
    metrics().log(step, {{"mem_params_bytes", double(memory.parameters)},
                         {"mem_grads_bytes", double(memory.gradients)},
                         {"mem_optim_bytes", double(memory.optimizerState)}});
}

void Accelerator::prepareModel(const std::shared_ptr<torch::nn::Module> &model)
{
    const size_t index = d->models.size();
    for (size_t i = 0; i < index; ++i) {
        if (d->models[i].module == model)
            throw std::invalid_argument("prepareModel: this model is prepared already (model " + std::to_string(i) +
                                        ")");
    }
    d->precision->acceptModel(index);
    bool trainable = false;
    for (const auto &p : model->parameters())
        trainable = trainable || p.requires_grad();
    if (!d->device.is_cpu())
        model->to(d->device);
    d->precision->convertModel(model, d->env.rank == 0);
    // Loaded identically by every rank: nothing to broadcast, and a sharding engine reads only this
    // rank's chunks of it.
    const auto everywhere = std::find(d->loadedEverywhere.begin(), d->loadedEverywhere.end(), model.get());
    const bool loadedEverywhere = everywhere != d->loadedEverywhere.end();
    if (loadedEverywhere)
        d->loadedEverywhere.erase(everywhere);
    if (d->group && !loadedEverywhere) {
        // Units built sharded (zero3_init_flag) were broadcast as they were built; their storage is released.
        std::unordered_set<const void *> built;
        for (const ShardingEngine *engine : {engineOf(d->firstStrategy), engineOf(d->building)}) {
            if (engine) {
                for (const auto &p : engine->builtParameters())
                    built.insert(p.unsafeGetTensorImpl());
            }
        }
        torch::NoGradGuard noGrad;
        for (auto &tensor : model->parameters()) {
            if (!built.count(tensor.unsafeGetTensorImpl()))
                broadcast(tensor, 0);
        }
        for (auto &tensor : model->buffers())
            broadcast(tensor, 0);
    }
    // The offered units inside this model, in offer order; the others wait for their model.
    std::vector<std::shared_ptr<ShardedModule>> units, rest;
    for (auto &holder : d->offered)
        (contains(model, holder->module().get()) ? units : rest).push_back(holder);
    d->offered = std::move(rest);
    // The strategy create() made serves the first model unless that model is frozen and a frozen
    // model needs another kind (whole on every rank below stage 3).
    std::unique_ptr<DistributedStrategy> strategy;
    const bool frozenDiffers = !trainable && d->strategySetup.group && d->plan.sharded() && d->plan.stage < 3;
    // zero3_init_flag: the engine that holds this model's built units serves it.
    if (holdsBuiltUnitsOf(engineOf(d->building), model, false))
        strategy = std::move(d->building);
    else if (d->firstStrategy && !frozenDiffers && !holdsBuiltUnitsOf(engineOf(d->firstStrategy), model, true))
        strategy = std::move(d->firstStrategy);
    else
        strategy = makeStrategy(d->strategySetup, !trainable);
    if (ShardingEngine *engine = engineOf(strategy)) {
        engine->setBroadcast([this](torch::Tensor &tensor) { broadcast(tensor, 0); });
        engine->readOwnChunksOnly(loadedEverywhere);
    }
    // The strategy asks the precision policy what the recipe needs from it (gradients reduced in the
    // recipe's format, weights gathered as FP8 codes).
    strategy->prepareModel(model, units);
    if (d->plan.zero3Init && d->group && d->env.rank == 0 && strategy->shardsParameters())
        noteZero3Init(*engineOf(strategy), *model, index, d->precision->convertsModels());
    Private::PreparedModel prepared;
    prepared.name = strategy->name();
    if (!trainable)
        prepared.name += strategy->shardsParameters() ? " (frozen, sharded)" : " (frozen, whole on every rank)";
    prepared.module = model;
    prepared.strategy = std::move(strategy);
    prepared.trainable = trainable;
    d->models.push_back(std::move(prepared));
}

std::shared_ptr<AcceleratedOptimizer> Accelerator::prepareOptimizer(torch::optim::Optimizer &optimizer)
{
    // fp16: one GradScaler unscales and steps one optimizer per step.
    if (d->precision->scalesLoss() && !d->optimizers.empty())
        throw std::invalid_argument("prepareOptimizer: mixed precision fp16 with a second optimizer is not "
                                    "implemented (the loss scaler unscales one optimizer's gradients per step)");
    // The models whose parameters the optimizer steps.
    std::unordered_set<const void *> held;
    for (const auto &group : optimizer.param_groups()) {
        for (const auto &p : group.params())
            held.insert(p.unsafeGetTensorImpl());
    }
    std::vector<size_t> models;
    for (size_t m = 0; m < d->models.size(); ++m) {
        for (const auto &p : d->models[m].module->parameters()) {
            if (held.count(p.unsafeGetTensorImpl())) {
                models.push_back(m);
                break;
            }
        }
    }
    if (models.size() > 1) {
        for (size_t m : models) {
            if (d->models[m].strategy->savesOwnState())
                throw std::invalid_argument("prepareOptimizer: the optimizer steps parameters of models " +
                                            joinIndices(models) + "; under " + d->plan.strategy +
                                            " each prepared model needs an optimizer of its own");
        }
    }
    // The optimizer the precision's recipe steps instead (MS-AMP's low-bit AdamW), or this one.
    torch::optim::Optimizer *target = &d->precision->prepareOptimizer(optimizer, d->env.rank == 0);
    for (size_t m : models)
        d->models[m].strategy->prepareOptimizer(*target); // ZeRO: the optimizer now steps this rank's shards
    auto prepared = std::make_shared<AcceleratedOptimizer>(*this, *target);
    d->optimizers.push_back(prepared);
    d->optimizerModels.push_back(models);
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

const DeviceMesh &Accelerator::mesh() const
{
    return d->strategySetup.mesh;
}

std::unique_ptr<Collectives> Accelerator::meshCollectives(MeshDim dim) const
{
    return runtime::meshCollectives(d->strategySetup, dim, {"ACCEL_SHM_COLLECTIVES", "ACCEL_SHM_ALLREDUCE"});
}

Result<std::shared_ptr<ShardedDataLoader>> Accelerator::prepareDataLoader(int64_t datasetSize, int64_t batchSize,
                                                                          bool shuffle, bool dropLast)
{
    // The ranks of one data-parallel replica (tp, cp) read the same samples.
    const DeviceMesh &mesh = d->strategySetup.mesh;
    auto loader =
        ShardedDataLoader::create(datasetSize, batchSize, shuffle, dropLast, mesh.dataParallelIndex(d->env.rank),
                                  mesh.dataParallelSize(), d->options.data);
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
    for (auto &model : d->models)
        model.strategy->setSyncEnabled(d->syncGradients);
}

void Accelerator::backward(const at::Tensor &lossIn)
{
    const torch::Tensor loss = d->precision->scaleLoss(lossIn);
    if (d->accumulationSteps > 1)
        (loss / double(d->accumulationSteps)).backward();
    else
        loss.backward();
    for (auto &model : d->models)
        model.strategy->afterBackward(d->syncGradients);
    d->precision->afterBackward();
}

double Accelerator::clipGradNorm(double maxNorm, double normType)
{
    if (d->models.empty())
        throw std::logic_error("clipGradNorm: prepare a model first");
    return d->clip(d->allModels(), maxNorm, normType);
}

double Accelerator::clipGradNorm(const std::shared_ptr<torch::nn::Module> &model, double maxNorm, double normType)
{
    for (size_t m = 0; m < d->models.size(); ++m) {
        if (d->models[m].module == model)
            return d->clip({m}, maxNorm, normType);
    }
    throw std::invalid_argument("clipGradNorm: the model is not a prepared model");
}

std::vector<size_t> Accelerator::Private::allModels() const
{
    std::vector<size_t> all(models.size());
    for (size_t m = 0; m < all.size(); ++m)
        all[m] = m;
    return all;
}

const std::vector<size_t> &Accelerator::Private::modelsOf(const AcceleratedOptimizer &optimizer) const
{
    for (size_t o = 0; o < optimizers.size(); ++o) {
        if (optimizers[o].get() == &optimizer)
            return optimizerModels[o];
    }
    throw std::logic_error("AcceleratedOptimizer: not prepared by this Accelerator");
}

double Accelerator::Private::clip(const std::vector<size_t> &which, double maxNorm, double normType)
{
    for (size_t m : which)
        models[m].strategy->finishGradients();
    if (precision->scalesLoss()) {
        // Clip the true gradients, as Accelerate's clip_grad_norm_ unscales first (every model's:
        // the scaler unscales once per step).
        std::vector<torch::Tensor> parameters;
        for (const auto &model : models) {
            for (const auto &p : model.module->parameters())
                parameters.push_back(p);
        }
        precision->unscale(parameters);
    }
    std::vector<size_t> trained;
    for (size_t m : which) {
        if (models[m].trainable)
            trained.push_back(m);
    }
    if (trained.size() == 1)
        return models[trained.front()].strategy->clipGradNorm(maxNorm, normType);
    // Several models: one global norm over all their gradients, as clip_grad_norm_ computes it over
    // the parameters of all of them together.
    const bool infinity = std::isinf(normType);
    double part = 0;
    for (size_t m : trained) {
        const double mine = models[m].strategy->gradientNormPart(normType);
        part = infinity ? std::max(part, mine) : part + mine;
    }
    const double total = infinity ? part : std::pow(part, 1.0 / normType);
    const double coefficient = maxNorm / (total + 1e-6);
    if (coefficient < 1) {
        for (size_t m : trained)
            models[m].strategy->scaleGradients(coefficient);
    }
    return total;
}

AutocastGuard Accelerator::autocast() const
{
    AutocastGuard guard(d->precision->autocasts(), d->device.is_cuda(), d->precision->mode() == MixedPrecision::Fp16);
    if (auto scope = d->precision->scope())
        guard.holdScope(std::move(scope));
    return guard;
}

} // namespace accel::runtime
