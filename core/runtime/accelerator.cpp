// Accelerator: construction (environment, precision, sharding plan, rendezvous, strategy),
// accessors, autocast, seed, printing and metrics. Joining the process group lives in
// rendezvous.cpp, prepare() in preparation.cpp (the optimizer and scheduler wrappers in
// training.cpp), collectives in acceleratorcollectives.cpp,
// gradient bucketing in gradientsync.cpp, checkpoints in checkpoint.cpp.
#include "core/runtime/accelerator_p.h"

#include "core/common/log.h"
#include "core/runtime/strategy/strategyfactory.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#ifdef ACCEL_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

#include <chrono>
#include <iostream>
#include <thread>

namespace accel::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// FP8 GEMMs on a GPU (torch::_scaled_mm) need compute capability 8.9 or higher (Ada, Hopper and
// newer); below that the recipe cannot run there, and the rank says so before training rather than
// failing in the first forward or falling back to bf16.
Result<void> checkFp8Device(const at::Device &device, const Fp8Config &fp8)
{
#ifdef ACCEL_WITH_CUDA
    if (device.is_cuda()) {
        int major = 0, minor = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device.index()) != cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device.index()) != cudaSuccess)
            return makeError(ErrorCode::Unsupported, "mixed precision fp8 (" + fp8.describe() +
                                                         "): cannot read the compute capability of " + device.str());
        if (major * 10 + minor < 89)
            return makeError(ErrorCode::Unsupported, "mixed precision fp8 (" + fp8.describe() +
                                                         ") needs a GPU of compute capability 8.9 or "
                                                         "higher for its FP8 GEMMs: " +
                                                         device.str() + " has " + std::to_string(major) + "." +
                                                         std::to_string(minor) +
                                                         "; use bf16 there, or ACCELERATE_USE_CPU=true to run the "
                                                         "FP8 recipe on the CPU");
    }
#else
    (void)device;
    (void)fp8;
#endif
    return {};
}

// FP8 under a sharded plan (docs/fp8.md "Sharded training"). TE and AO act on each Linear's
// computation, for which the engine has gathered the unit's whole weight, so they run under every
// ZeRO stage and FSDP strategy. MS-AMP keeps scaled FP16 weights with FP8 gradients and moments,
// which its own ZeRO optimizer partitions (msamp.deepspeed; under FSDP Accelerate refuses MS-AMP):
// not implemented. AO under FSDP2 all-gathers the converted weights' shards as FP8 codes (torchao's
// enable_fsdp_float8_all_gather, ShardingEngine::gatherInFp8); FSDP1 and DeepSpeed have no such hook.
Result<void> checkFp8Sharding(const Fp8Config &fp8, ShardingPlan &plan)
{
    if (!plan.sharded())
        return {};
    if (fp8.backend == Fp8Backend::MsAmp)
        return makeError(ErrorCode::Unsupported,
                         plan.describe() + " with " + fp8.describe() +
                             " is not implemented: MS-AMP's FP8 weight gradients and moments need its own ZeRO "
                             "optimizer (msamp.deepspeed), and Accelerate refuses MS-AMP under FSDP; use DDP, or "
                             "ACCELERATE_FP8_BACKEND=TE or AO");
    if (fp8.backend != Fp8Backend::Ao)
        return {};
    if (plan.source == ShardingSource::Fsdp && plan.cpuRamEfficientLoading)
        return makeError(ErrorCode::Unsupported,
                         "FSDP_CPU_RAM_EFFICIENT_LOADING=true with " + fp8.describe() +
                             " is refused (Accelerate refuses torchao's FP8 with CPU-RAM-efficient loading too)");
    if (!fp8.enableFsdpFloat8AllGather || (plan.source == ShardingSource::Fsdp && plan.fsdpVersion == 2))
        return {};
    plan.notes.push_back("ACCELERATE_FP8_ENABLE_FSDP_FLOAT8_ALL_GATHER=true has no effect under " + plan.strategy +
                         ": torchao's FP8 all-gather works with FSDP2 (fully_shard) only");
    return {};
}

} // namespace

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
    d->models.clear();
    d->firstStrategy.reset();
    d->subgroups.clear();
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
    if (d->precision == MixedPrecision::Fp8) {
        // The recipe ACCELERATE_FP8_* asks for, or the reason it cannot run: never bf16 instead.
        if (!env.fp8)
            return tl::unexpected(env.fp8.error());
        if (auto fits = checkFp8Sharding(*env.fp8, d->plan); !fits)
            return tl::unexpected(fits.error());
        if (auto gemm = checkFp8Device(d->device, *env.fp8); !gemm)
            return tl::unexpected(gemm.error());
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
        // Every model's strategy shares the sub-groups: one gloo group per prefix.
        auto &group = raw->subgroups[prefix];
        if (!group)
            group = glooGroup(*raw, c10::make_intrusive<c10d::PrefixStore>(prefix, raw->store), rank, size);
        return group;
    };
    d->strategySetup = setup;
    try {
        d->firstStrategy = makeStrategy(setup);
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
    for (const auto &model : d->models) {
        if (model.trainable)
            return model.strategy->gradientTransport();
    }
    return d->firstStrategy ? d->firstStrategy->gradientTransport() : "none";
}

std::string Accelerator::strategyName() const
{
    return d->plan.strategy;
}

std::string Accelerator::strategyName(size_t index) const
{
    return d->models.at(index).name;
}

size_t Accelerator::modelCount() const
{
    return d->models.size();
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

} // namespace accel::runtime
