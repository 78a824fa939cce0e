// Accelerator: construction and rendezvous, prepare(), accumulation, collectives.
// Gradient bucketing lives in gradientsync.cpp, checkpoints in checkpoint.cpp.
#include "core/runtime/accelerator_p.h"

#include "core/common/log.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <iostream>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace accel::runtime {

namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds toMs(double seconds)
{
    return std::chrono::milliseconds(int64_t(std::max(0.001, seconds) * 1000.0));
}

std::string hostName()
{
    char buffer[256] = {};
    ::gethostname(buffer, sizeof(buffer) - 1);
    return buffer;
}

std::string formatSeconds(double seconds)
{
    std::ostringstream out;
    out << seconds << " s";
    return out.str();
}

std::string joinRanks(const std::vector<int> &ranks)
{
    std::string text;
    for (size_t i = 0; i < ranks.size(); ++i) {
        if (i == 8 && ranks.size() > 10) {
            text += ", ... (" + std::to_string(ranks.size()) + " in all)";
            break;
        }
        text += (i ? ", " : "") + std::to_string(ranks[i]);
    }
    return text;
}

bool isLoopback(const std::string &address)
{
    return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

// Joins the store, announces this rank and waits until every rank has announced itself.
Result<void> rendezvous(Accelerator::Private &d)
{
    const DistributedEnv &env = d.env;
    const std::string where = env.masterAddr + ":" + std::to_string(env.masterPort);
    const double timeoutS = d.options.rendezvousTimeoutS;
    const auto deadline = Clock::now() + toMs(timeoutS);

    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = uint16_t(env.masterPort);
    storeOptions.isServer = env.rank == 0 && !env.useAgentStore;
    storeOptions.numWorkers = c10::nullopt;
    storeOptions.waitWorkers = false;
    storeOptions.timeout = toMs(timeoutS);
    c10::intrusive_ptr<c10d::Store> base;
    try {
        base = c10::make_intrusive<c10d::TCPStore>(env.masterAddr, storeOptions);
    } catch (const std::exception &e) {
        std::string first = e.what();
        first = first.substr(0, first.find('\n'));
        if (storeOptions.isServer)
            return makeError(ErrorCode::Failed,
                             "rendezvous: rank 0 cannot host the store on port " + std::to_string(env.masterPort) +
                                 " (is another job using MASTER_PORT=" + std::to_string(env.masterPort) +
                                 "?): " + first,
                             where);
        return makeError(ErrorCode::Timeout,
                         "rendezvous: rank " + std::to_string(env.rank) + " could not reach the store at " + where +
                             " within " + formatSeconds(timeoutS) +
                             (env.useAgentStore ? " (the launcher's agent store)" : " (hosted by rank 0)") +
                             "; missing ranks: 0" + (env.useAgentStore ? "" : " (the store host)") +
                             ". Check MASTER_ADDR/MASTER_PORT and that rank 0 started. (" + first + ")",
                         where);
    }
    c10::intrusive_ptr<c10d::Store> store = base;
    if (env.useAgentStore)
        store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restartCount), store);
    store = c10::make_intrusive<c10d::PrefixStore>("accel", store);

    try {
        const std::string me = "rank/" + std::to_string(env.rank);
        const std::string value = hostName() + " pid " + std::to_string(::getpid());
        store->set(me, std::vector<uint8_t>(value.begin(), value.end()));
        std::vector<std::string> keys;
        for (int r = 0; r < env.worldSize; ++r)
            keys.push_back("rank/" + std::to_string(r));
        for (;;) {
            if (store->check(keys))
                break;
            if (Clock::now() >= deadline) {
                std::vector<int> missing;
                for (int r = 0; r < env.worldSize; ++r) {
                    if (!store->check({keys[size_t(r)]}))
                        missing.push_back(r);
                }
                return makeError(ErrorCode::Timeout,
                                 "rendezvous at " + where + " timed out after " + formatSeconds(timeoutS) +
                                     " on rank " + std::to_string(env.rank) + ": " + std::to_string(missing.size()) +
                                     " of WORLD_SIZE=" + std::to_string(env.worldSize) +
                                     " ranks never joined; missing ranks: " + joinRanks(missing),
                                 where);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    } catch (const std::exception &e) {
        return makeError(ErrorCode::Failed, std::string("rendezvous: the store connection failed: ") + e.what(), where);
    }
    d.store = store;

    try {
        auto glooOptions = c10d::ProcessGroupGloo::Options::create(toMs(d.options.collectiveTimeoutS));
        if (!env.glooInterface.empty())
            glooOptions->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(env.glooInterface));
        else if (isLoopback(env.masterAddr) && env.localWorldSize == env.worldSize)
            glooOptions->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
        else
            glooOptions->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
        glooOptions->threads = 2;
        auto glooStore = c10::make_intrusive<c10d::PrefixStore>("gloo", store);
        d.group = c10::make_intrusive<c10d::ProcessGroupGloo>(glooStore, env.rank, env.worldSize, glooOptions);
    } catch (const std::exception &e) {
        std::string first = e.what();
        return makeError(ErrorCode::Failed,
                         "rendezvous: gloo could not connect the ranks: " + first.substr(0, first.find('\n')), where);
    }
    return {};
}

template <typename F>
void runWork(F &&start)
{
    c10::intrusive_ptr<c10d::Work> work = start();
    work->wait();
}

} // namespace

// ---- AutocastGuard ---------------------------------------------------------------------------

AutocastGuard::AutocastGuard(bool enable) : m_enabled(enable)
{
    if (!m_enabled)
        return;
    m_previous = at::autocast::is_cpu_enabled();
    m_previousDtype = int(at::autocast::get_autocast_cpu_dtype());
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::increment_nesting();
}

AutocastGuard::AutocastGuard(AutocastGuard &&other) noexcept
    : m_enabled(other.m_enabled), m_previous(other.m_previous), m_previousDtype(other.m_previousDtype)
{
    other.m_enabled = false;
}

AutocastGuard::~AutocastGuard()
{
    if (!m_enabled)
        return;
    if (at::autocast::decrement_nesting() == 0)
        at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(m_previous);
    at::autocast::set_autocast_cpu_dtype(at::ScalarType(m_previousDtype));
}

// ---- Private ---------------------------------------------------------------------------------

std::shared_ptr<ShardedDataLoader> Accelerator::Private::activeLoader() const
{
    for (auto it = loaders.rbegin(); it != loaders.rend(); ++it) {
        if (auto loader = it->lock(); loader && loader->active())
            return loader;
    }
    return nullptr;
}

void Accelerator::Private::checkShapes(const torch::Tensor &tensor, const char *operation)
{
    if (!env.debugMode || !group)
        return;
    constexpr int64_t maxDims = 8;
    auto shape = torch::full({maxDims + 1}, -1, torch::kInt64);
    shape[0] = tensor.dim();
    for (int64_t i = 0; i < std::min<int64_t>(tensor.dim(), maxDims); ++i)
        shape[i + 1] = tensor.size(i);
    std::vector<std::vector<torch::Tensor>> out(1);
    for (int r = 0; r < env.worldSize; ++r)
        out[0].push_back(torch::empty_like(shape));
    std::vector<torch::Tensor> in{shape};
    runWork([&] { return group->allgather(out, in); });
    std::ostringstream text;
    bool mismatch = false;
    for (int r = 0; r < env.worldSize; ++r) {
        if (!out[0][size_t(r)].equal(shape))
            mismatch = true;
        const auto s = out[0][size_t(r)];
        text << "\n  rank " << r << ": [";
        for (int64_t i = 0; i < std::min<int64_t>(s[0].item<int64_t>(), maxDims); ++i)
            text << (i ? ", " : "") << s[i + 1].item<int64_t>();
        text << "]";
    }
    if (mismatch)
        throw std::runtime_error(std::string(operation) +
                                 ": tensor shapes differ across processes (ACCELERATE_DEBUG_MODE):" + text.str());
}

// ---- Accelerator -----------------------------------------------------------------------------

Accelerator::Accelerator(std::unique_ptr<Private> d) : d(std::move(d)) {}

Accelerator::~Accelerator()
{
    if (!d->store)
        return;
    // Rank 0 hosts the store: it stays until every rank has said goodbye, so nobody loses the
    // connection while still finishing its last collective.
    try {
        d->store->add("finished", 1);
        if (d->env.rank == 0 && !d->env.useAgentStore) {
            const auto deadline = Clock::now() + toMs(std::min(60.0, d->options.rendezvousTimeoutS));
            while (d->store->add("finished", 0) < d->env.worldSize && Clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    } catch (const std::exception &) {
    }
    d->gradientSync.reset();
    d->group.reset();
}

Result<std::unique_ptr<Accelerator>> Accelerator::create(const AcceleratorOptions &options)
{
    auto env = DistributedEnv::fromEnvironment();
    if (!env)
        return tl::unexpected(env.error());
    return create(options, *env);
}

Result<std::unique_ptr<Accelerator>> Accelerator::create(const AcceleratorOptions &options, const DistributedEnv &env)
{
    auto d = std::make_unique<Private>();
    d->env = env;
    d->options = options;
    d->accumulationSteps = env.gradientAccumulationSteps > 0 ? env.gradientAccumulationSteps
                                                             : std::max(1, options.gradientAccumulationSteps);
    if (!options.mixedPrecision.empty()) {
        auto precision = parseMixedPrecision(options.mixedPrecision);
        if (!precision)
            return tl::unexpected(precision.error());
        d->precision = *precision;
    } else {
        d->precision = env.mixedPrecision;
    }
#ifndef ACCEL_WITH_CUDA
    if (d->precision == MixedPrecision::Fp16)
        return makeError(ErrorCode::Unsupported,
                         "mixed precision fp16 needs a CUDA build of libtorch; on CPU use bf16");
#endif
    if (env.numThreads > 0)
        at::set_num_threads(env.numThreads);
    if (env.distributed && env.worldSize > 1) {
        if (auto joined = rendezvous(*d); !joined)
            return tl::unexpected(joined.error());
    }
    return std::unique_ptr<Accelerator>(new Accelerator(std::move(d)));
}

const DistributedEnv &Accelerator::env() const
{
    return d->env;
}
int Accelerator::processIndex() const
{
    return d->env.rank;
}
int Accelerator::numProcesses() const
{
    return d->env.worldSize;
}
bool Accelerator::isLocalMainProcess() const
{
    return d->env.localRank == 0;
}
MixedPrecision Accelerator::mixedPrecision() const
{
    return d->precision;
}
int Accelerator::gradientAccumulationSteps() const
{
    return d->accumulationSteps;
}
const AcceleratorOptions &Accelerator::options() const
{
    return d->options;
}
bool Accelerator::syncGradients() const
{
    return d->syncGradients;
}
int64_t Accelerator::stepCounter() const
{
    return d->step;
}

std::string Accelerator::gradientTransport() const
{
    if (!d->gradientSync)
        return "none";
    return d->gradientSync->usesSharedMemory() ? "shared-memory" : "process-group";
}

void Accelerator::prepareModel(const std::shared_ptr<torch::nn::Module> &model)
{
    d->model = model;
    if (!d->group)
        return;
    torch::NoGradGuard noGrad;
    for (auto &tensor : model->parameters())
        broadcast(tensor, 0);
    for (auto &tensor : model->buffers())
        broadcast(tensor, 0);
    std::vector<torch::Tensor> trainable;
    for (auto &parameter : model->parameters()) {
        if (parameter.requires_grad())
            trainable.push_back(parameter);
    }
    if (trainable.empty())
        return;
    d->gradientSync =
        std::make_unique<GradientSync>(d->group, trainable, int64_t(d->options.bucketCapMb * 1024 * 1024));
    // CPU ranks that share this host sum gradients through shared memory (shmallreduce.h).
    if (trainable.front().device().is_cpu() && d->gradientSync->singleDtype()) {
        std::string why;
        auto shm = ShmAllReduce::create(*d->store, d->env.rank, d->env.worldSize, d->gradientSync->bucketElements(),
                                        trainable.front().scalar_type(), d->options.collectiveTimeoutS, &why);
        if (shm)
            d->gradientSync->useSharedMemory(std::move(shm));
        else
            accel::log::debug("runtime", "gradients through the process group: " + why);
    }
}

std::shared_ptr<AcceleratedOptimizer> Accelerator::prepareOptimizer(torch::optim::Optimizer &optimizer)
{
    auto prepared = std::make_shared<AcceleratedOptimizer>(*this, optimizer);
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
    if (d->gradientSync)
        d->gradientSync->setEnabled(d->syncGradients);
}

void Accelerator::backward(const at::Tensor &loss)
{
    if (d->accumulationSteps > 1)
        (loss / double(d->accumulationSteps)).backward();
    else
        loss.backward();
    if (d->gradientSync && d->syncGradients)
        d->gradientSync->finish();
}

double Accelerator::clipGradNorm(double maxNorm, double normType)
{
    if (!d->model)
        throw std::logic_error("clipGradNorm: prepare a model first");
    if (d->gradientSync)
        d->gradientSync->finish();
    return torch::nn::utils::clip_grad_norm_(d->model->parameters(), maxNorm, normType);
}

AutocastGuard Accelerator::autocast() const
{
    return AutocastGuard(d->precision == MixedPrecision::Bf16 || d->precision == MixedPrecision::Fp8);
}

at::Tensor Accelerator::gather(const at::Tensor &tensorIn)
{
    torch::Tensor tensor = tensorIn.dim() == 0 ? tensorIn.reshape({1}) : tensorIn.contiguous();
    if (!d->group)
        return tensor.clone();
    d->checkShapes(tensor, "gather");
    std::vector<std::vector<torch::Tensor>> out(1);
    for (int r = 0; r < d->env.worldSize; ++r)
        out[0].push_back(torch::empty_like(tensor));
    std::vector<torch::Tensor> in{tensor};
    runWork([&] { return d->group->allgather(out, in); });
    return torch::cat(out[0], 0);
}

at::Tensor Accelerator::gatherForMetrics(const at::Tensor &tensor)
{
    torch::Tensor all = gather(tensor);
    auto loader = d->activeLoader();
    if (loader && loader->endOfDataLoader() && loader->remainder() > 0)
        return all.slice(0, 0, std::min<int64_t>(loader->remainder(), all.size(0)));
    return all;
}

at::Tensor Accelerator::padAcrossProcesses(const at::Tensor &tensor, int64_t dim, double padIndex, bool padFirst)
{
    if (!d->group || tensor.dim() == 0)
        return tensor;
    if (dim < 0)
        dim += tensor.dim();
    auto sizes = gather(torch::tensor({tensor.size(dim)}, torch::kInt64));
    const int64_t maxSize = sizes.max().item<int64_t>();
    if (maxSize == tensor.size(dim))
        return tensor;
    auto shape = tensor.sizes().vec();
    shape[size_t(dim)] = maxSize;
    auto padded = torch::full(shape, padIndex, tensor.options());
    const int64_t start = padFirst ? maxSize - tensor.size(dim) : 0;
    padded.narrow(dim, start, tensor.size(dim)).copy_(tensor);
    return padded;
}

at::Tensor Accelerator::reduce(const at::Tensor &tensorIn, ReduceOp op)
{
    torch::Tensor tensor = tensorIn.clone().contiguous();
    if (!d->group)
        return tensor;
    d->checkShapes(tensor, "reduce");
    std::vector<torch::Tensor> in{tensor};
    c10d::AllreduceOptions reduceOptions;
    reduceOptions.reduceOp = op == ReduceOp::Max ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM;
    runWork([&] { return d->group->allreduce(in, reduceOptions); });
    if (op == ReduceOp::Mean)
        tensor.div_(d->env.worldSize);
    return tensor;
}

void Accelerator::broadcast(at::Tensor &tensor, int sourceRank)
{
    if (!d->group)
        return;
    d->checkShapes(tensor, "broadcast");
    torch::NoGradGuard noGrad;
    torch::Tensor buffer = tensor.is_contiguous() ? tensor.detach() : tensor.detach().contiguous();
    std::vector<torch::Tensor> in{buffer};
    c10d::BroadcastOptions broadcastOptions;
    broadcastOptions.rootRank = sourceRank;
    runWork([&] { return d->group->broadcast(in, broadcastOptions); });
    if (!buffer.is_same(tensor))
        tensor.detach().copy_(buffer);
}

void Accelerator::waitForEveryone()
{
    if (!d->group)
        return;
    runWork([&] { return d->group->barrier(); });
}

void Accelerator::setSeed(uint64_t seed)
{
    torch::manual_seed(seed);
    d->options.data.dataSeed = seed;
}

void Accelerator::print(const std::string &text) const
{
    if (d->env.rank == 0)
        std::cout << text << std::endl;
}

MetricsWriter &Accelerator::metrics()
{
    if (!d->metrics)
        d->metrics = std::make_unique<MetricsWriter>(MetricsWriter::defaultPath(d->env.rank), d->env.rank);
    return *d->metrics;
}

// ---- AcceleratedOptimizer / AcceleratedScheduler ----------------------------------------------

AcceleratedOptimizer::AcceleratedOptimizer(Accelerator &accelerator, torch::optim::Optimizer &optimizer)
    : m_accelerator(accelerator), m_optimizer(optimizer)
{}

void AcceleratedOptimizer::step()
{
    if (!m_accelerator.syncGradients())
        return;
    if (auto &sync = m_accelerator.impl().gradientSync)
        sync->finish();
    m_optimizer.step();
    ++m_steps;
}

void AcceleratedOptimizer::zeroGrad()
{
    if (!m_accelerator.syncGradients())
        return;
    // set_to_none (Accelerate's default): libtorch 1.13's zero_grad() would first write zeros.
    for (auto &group : m_optimizer.param_groups()) {
        for (auto &parameter : group.params())
            parameter.mutable_grad() = torch::Tensor();
    }
}

double AcceleratedOptimizer::lr(size_t group) const
{
    return m_optimizer.param_groups().at(group).options().get_lr();
}

void AcceleratedOptimizer::setLr(double lr)
{
    for (auto &group : m_optimizer.param_groups())
        group.options().set_lr(lr);
}

AcceleratedScheduler::AcceleratedScheduler(Accelerator &accelerator, AcceleratedOptimizer &optimizer,
                                           std::function<double(int64_t)> lambda)
    : m_accelerator(accelerator), m_optimizer(optimizer), m_lambda(std::move(lambda))
{
    for (auto &group : optimizer.optimizer().param_groups())
        m_baseLrs.push_back(group.options().get_lr());
    apply();
}

void AcceleratedScheduler::step()
{
    if (!m_accelerator.syncGradients())
        return;
    m_lastStep += m_accelerator.options().data.splitBatches ? 1 : m_accelerator.numProcesses();
    apply();
}

void AcceleratedScheduler::setLastStep(int64_t step)
{
    m_lastStep = step;
    apply();
}

double AcceleratedScheduler::lr() const
{
    return m_optimizer.lr();
}

void AcceleratedScheduler::apply()
{
    auto &groups = m_optimizer.optimizer().param_groups();
    const double factor = m_lambda(m_lastStep);
    for (size_t i = 0; i < groups.size() && i < m_baseLrs.size(); ++i)
        groups[i].options().set_lr(m_baseLrs[i] * factor);
}

} // namespace accel::runtime
