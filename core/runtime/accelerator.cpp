// Accelerator: construction and rendezvous, prepare(), accumulation, collectives.
// Gradient bucketing lives in gradientsync.cpp, checkpoints in checkpoint.cpp.
#include "core/runtime/accelerator_p.h"

#include "core/common/log.h"
#include "core/runtime/strategy/strategyfactory.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef ACCEL_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <netinet/in.h>
#include <sstream>
#include <sys/socket.h>
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

// A listening socket on the loopback address for the store of a single-host job: c10d's TCPStore
// server binds every interface by itself, which would let other hosts (and, through any address,
// anyone) read and write the rendezvous keys. Returns -1 with errno set on failure.
int listenOnLoopback(const std::string &address, uint16_t port)
{
    const bool v6 = address == "::1";
    const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int rc = -1;
    if (v6) {
        sockaddr_in6 in{};
        in.sin6_family = AF_INET6;
        in.sin6_port = htons(port);
        in.sin6_addr = in6addr_loopback;
        rc = ::bind(fd, reinterpret_cast<sockaddr *>(&in), sizeof(in));
    } else {
        sockaddr_in in{};
        in.sin_family = AF_INET;
        in.sin_port = htons(port);
        in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        rc = ::bind(fd, reinterpret_cast<sockaddr *>(&in), sizeof(in));
    }
    if (rc != 0 || ::listen(fd, SOMAXCONN) != 0) {
        const int saved = errno;
        ::close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

// Joins the store, announces this rank and waits until every rank has announced itself.
// A gloo group of `size` ranks meeting in `store`, on the interface the environment chose (also
// hybrid sharding's machine and replica groups).
c10::intrusive_ptr<c10d::Backend> glooGroup(const Accelerator::Private &d, const c10::intrusive_ptr<c10d::Store> &store,
                                            int rank, int size)
{
    const DistributedEnv &env = d.env;
    auto glooOptions = c10d::ProcessGroupGloo::Options::create(toMs(d.options.collectiveTimeoutS));
    if (!env.glooInterface.empty())
        glooOptions->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(env.glooInterface));
    else if (isLoopback(env.masterAddr) && env.localWorldSize == env.worldSize)
        glooOptions->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else
        glooOptions->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    glooOptions->threads = 2;
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, glooOptions);
}

Result<void> rendezvous(Accelerator::Private &d)
{
    const DistributedEnv &env = d.env;
    const std::string where = env.masterAddr + ":" + std::to_string(env.masterPort);
    const double timeoutS = d.options.rendezvousTimeoutS;
    const auto deadline = Clock::now() + toMs(timeoutS);

    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = uint16_t(env.masterPort);
    storeOptions.isServer = env.rank == 0 && !env.useAgentStore;
    storeOptions.numWorkers = std::nullopt;
    storeOptions.waitWorkers = false;
    storeOptions.timeout = toMs(timeoutS);
    const auto cannotHost = [&](const std::string &reason) {
        return makeError(ErrorCode::Failed,
                         "rendezvous: rank 0 cannot host the store on port " + std::to_string(env.masterPort) +
                             " (is another job using MASTER_PORT=" + std::to_string(env.masterPort) + "?): " + reason,
                         where);
    };
    if (storeOptions.isServer && isLoopback(env.masterAddr)) {
        // Every rank reaches the store through loopback: listen there only.
        const int fd = listenOnLoopback(env.masterAddr == "::1" ? "::1" : "127.0.0.1", storeOptions.port);
        if (fd < 0)
            return cannotHost(std::strerror(errno));
        storeOptions.masterListenFd = fd;
    }
    c10::intrusive_ptr<c10d::Store> base;
    try {
        base = c10::make_intrusive<c10d::TCPStore>(env.masterAddr, storeOptions);
    } catch (const std::exception &e) {
        std::string first = e.what();
        first = first.substr(0, first.find('\n'));
        if (storeOptions.isServer)
            return cannotHost(first);
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
#ifdef ACCEL_WITH_CUDA
        if (d.device.is_cuda()) {
            // GPUs talk through NCCL, as Accelerate's default backend for CUDA.
            auto ncclOptions = c10d::ProcessGroupNCCL::Options::create();
            ncclOptions->timeout = toMs(d.options.collectiveTimeoutS);
            d.group = c10::make_intrusive<c10d::ProcessGroupNCCL>(c10::make_intrusive<c10d::PrefixStore>("nccl", store),
                                                                  env.rank, env.worldSize, ncclOptions);
            return {};
        }
#endif
        d.group = glooGroup(d, c10::make_intrusive<c10d::PrefixStore>("gloo", store), env.rank, env.worldSize);
    } catch (const std::exception &e) {
        std::string first = e.what();
        return makeError(ErrorCode::Failed,
                         "rendezvous: gloo could not connect the ranks: " + first.substr(0, first.find('\n')), where);
    }
    return {};
}

// Why a rank computes on the CPU, for messages.
const char *cpuReason(const DistributedEnv &env)
{
#ifdef ACCEL_WITH_CUDA
    if (env.useCpu)
        return "ACCELERATE_USE_CPU is set";
    return "no GPU is visible to this process";
#else
    (void)env;
    return "accel-worker was built without CUDA";
#endif
}

// The device of this rank, as Accelerate's PartialState picks it.
Result<torch::Device> pickDevice(const DistributedEnv &env)
{
#ifdef ACCEL_WITH_CUDA
    if (!env.useCpu && torch::cuda::is_available()) {
        const int count = int(torch::cuda::device_count());
        if (env.localRank >= count)
            return makeError(
                ErrorCode::InvalidInput,
                "LOCAL_RANK=" + std::to_string(env.localRank) + " but only " + std::to_string(count) +
                    " GPU(s) are visible to this process (CUDA_VISIBLE_DEVICES=" +
                    (std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "not set") +
                    "); start at most one process per GPU or set gpu_ids",
                "LOCAL_RANK");
        c10::cuda::set_device(c10::DeviceIndex(env.localRank));
        return torch::Device(torch::kCUDA, c10::DeviceIndex(env.localRank));
    }
#else
    (void)env;
#endif
    return torch::Device(torch::kCPU);
}

template <typename F>
void runWork(F &&start)
{
    c10::intrusive_ptr<c10d::Work> work = start();
    work->wait();
}

} // namespace

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

// ---- AutocastGuard ---------------------------------------------------------------------------

AutocastGuard::AutocastGuard(bool enable, bool cuda, bool fp16) : m_enabled(enable), m_cuda(cuda)
{
    if (!m_enabled)
        return;
    const at::DeviceType device = m_cuda ? at::kCUDA : at::kCPU;
    m_previous = at::autocast::is_autocast_enabled(device);
    m_previousDtype = int(at::autocast::get_autocast_dtype(device));
    at::autocast::set_autocast_enabled(device, true);
    at::autocast::set_autocast_dtype(device, fp16 ? at::kHalf : at::kBFloat16);
    at::autocast::increment_nesting();
}

AutocastGuard::AutocastGuard(AutocastGuard &&other) noexcept
    : m_enabled(other.m_enabled), m_cuda(other.m_cuda), m_previous(other.m_previous),
      m_previousDtype(other.m_previousDtype), m_scope(std::move(other.m_scope))
{
    other.m_enabled = false;
}

AutocastGuard::~AutocastGuard()
{
    if (!m_enabled)
        return;
    if (at::autocast::decrement_nesting() == 0)
        at::autocast::clear_cache();
    const at::DeviceType device = m_cuda ? at::kCUDA : at::kCPU;
    at::autocast::set_autocast_enabled(device, m_previous);
    at::autocast::set_autocast_dtype(device, at::ScalarType(m_previousDtype));
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
    d->strategy.reset();
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
    if (auto device = pickDevice(env); !device)
        return tl::unexpected(device.error());
    else
        d->device = *device;
    if (d->precision == MixedPrecision::Fp16) {
        // fp16 autocast and dynamic loss scaling are the CUDA recipe; on CPU the runtime says so
        // rather than training in another precision.
        if (!d->device.is_cuda())
            return makeError(ErrorCode::Unsupported,
                             std::string("mixed precision fp16 needs a GPU: this rank runs on CPU (") + cpuReason(env) +
                                 "); use bf16 on CPU");
        d->scaler = std::make_unique<GradScaler>(d->device);
    }
    // FSDP / DeepSpeed: what is sharded, or an error naming the setting the runtime lacks.
    auto plan = shardingPlanFromEnvironment();
    if (!plan)
        return tl::unexpected(plan.error());
    if (auto topology = plan->checkTopology(env.worldSize, env.localWorldSize); !topology)
        return tl::unexpected(topology.error());
    if (plan->sharded() && !d->device.is_cpu())
        return makeError(ErrorCode::Unsupported, plan->describe() + ": sharding on " + d->device.str() +
                                                     " is not implemented yet; set ACCELERATE_USE_CPU=true to "
                                                     "shard on the CPU");
    if (plan->gradientAccumulationSteps > 0 && env.gradientAccumulationSteps == 0)
        d->accumulationSteps = plan->gradientAccumulationSteps;
    d->plan = *plan;
    if (d->precision == MixedPrecision::Fp8 && d->plan.sharded())
        return makeError(ErrorCode::Unsupported, d->plan.describe() +
                                                     " with mixed precision fp8 is not implemented (FP8 "
                                                     "Linear layers are not gathered from shards); use DDP");
    if (d->precision == MixedPrecision::Fp8) {
        // The recipe ACCELERATE_FP8_* asks for, or the reason it cannot run: never bf16 instead.
        if (!env.fp8)
            return tl::unexpected(env.fp8.error());
        Private *p = d.get();
        auto fp8 = Fp8Training::create(*env.fp8, [p](std::vector<float> &amax) {
            if (!p->group || amax.empty())
                return;
            std::vector<torch::Tensor> tensors{torch::tensor(amax, torch::kFloat)};
            c10d::AllreduceOptions max;
            max.reduceOp = c10d::ReduceOp::MAX;
            runWork([&] { return p->group->allreduce(tensors, max); });
            std::copy_n(tensors[0].data_ptr<float>(), amax.size(), amax.begin());
        });
        if (!fp8)
            return tl::unexpected(fp8.error());
        d->fp8 = std::move(*fp8);
    }
    if (env.numThreads > 0)
        at::set_num_threads(env.numThreads);
    if (env.distributed && env.worldSize > 1) {
        if (auto joined = rendezvous(*d); !joined)
            return tl::unexpected(joined.error());
    }
    StrategySetup setup{
        d->plan, env, d->group, d->store, {}, int64_t(options.bucketCapMb * 1024 * 1024), options.collectiveTimeoutS};
    Private *raw = d.get();
    setup.makeGroup = [raw](const std::string &prefix, int rank, int size) {
        return glooGroup(*raw, c10::make_intrusive<c10d::PrefixStore>(prefix, raw->store), rank, size);
    };
    try {
        d->strategy = makeStrategy(setup);
    } catch (const std::exception &e) {
        std::string first = e.what();
        return makeError(ErrorCode::Failed, d->plan.strategy + ": " + first.substr(0, first.find('\n')));
    }
    if (env.rank == 0) {
        for (const std::string &note : d->plan.notes)
            std::cerr << "note: " << note << std::endl;
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
std::string Accelerator::deviceName() const
{
    return d->device.str();
}
bool Accelerator::onCuda() const
{
    return d->device.is_cuda();
}
at::Tensor Accelerator::toDevice(const at::Tensor &tensor) const
{
    if (tensor.device() == d->device)
        return tensor;
    return tensor.to(d->device, /*non_blocking=*/true);
}
double Accelerator::deviceMemoryBytes() const
{
#ifdef ACCEL_WITH_CUDA
    if (d->device.is_cuda()) {
        const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(d->device.index());
        return double(stats.allocated_bytes[0].current); // 0: the aggregate over pool kinds
    }
#endif
    return -1;
}
double Accelerator::lossScale() const
{
    return d->scaler ? d->scaler->scaleValue() : 0.0;
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
    return d->strategy->gradientTransport();
}

std::string Accelerator::strategyName() const
{
    return d->strategy->name();
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
    auto &impl = m_accelerator.impl();
    impl.strategy->finishGradients();
    if (impl.plan.gradientClipping > 0) // DeepSpeed's gradient_clipping: its engine clips in step()
        m_accelerator.clipGradNorm(impl.plan.gradientClipping);
    if (auto &scaler = m_accelerator.impl().scaler) {
        std::vector<torch::Tensor> parameters;
        for (auto &group : m_optimizer.param_groups())
            parameters.insert(parameters.end(), group.params().begin(), group.params().end());
        // A step with inf/NaN gradients is skipped (the scale backs off), as GradScaler.step does.
        m_skipped = !scaler->step(parameters, [this] { m_optimizer.step(); });
        if (m_skipped)
            return;
    } else {
        m_optimizer.step();
    }
    if (auto &fp8 = m_accelerator.impl().fp8)
        fp8->afterOptimizerStep();
    ++m_steps;
    impl.strategy->afterOptimizerStep(); // ZeRO: every rank takes the updated shards
}

void AcceleratedOptimizer::zeroGrad()
{
    if (!m_accelerator.syncGradients())
        return;
    m_accelerator.impl().strategy->zeroGrad();
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
    if (!m_accelerator.syncGradients() || m_optimizer.stepWasSkipped())
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
