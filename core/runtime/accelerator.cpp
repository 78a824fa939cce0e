// Accelerator: construction (environment, precision policy, sharding plan and device mesh,
// rendezvous, strategy), accessors, autocast, seed, printing and metrics. Joining the process group
// lives in rendezvous.cpp, prepare() in preparation.cpp (the optimizer and scheduler wrappers in
// training.cpp), collectives in acceleratorcollectives.cpp, checkpoints in checkpoint.cpp; the
// strategies in strategy/, the precision policy in precision/.
#include "core/runtime/accelerator_p.h"

#include "core/common/accelerateenv.h"
#include "core/common/log.h"
#include "core/runtime/cudaplugin.h"
#include "core/runtime/strategy/strategyfactory.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <chrono>
#include <iostream>
#include <thread>

namespace accel::runtime {

namespace {

using Clock = std::chrono::steady_clock;

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
    MixedPrecision mode = env.mixedPrecision;
    if (!options.mixedPrecision.empty()) {
        auto precision = parseMixedPrecision(options.mixedPrecision);
        if (!precision)
            return tl::unexpected(precision.error());
        mode = *precision;
    }
    if (auto device = pickDevice(env); !device)
        return tl::unexpected(device.error());
    else
        d->device = *device;
    if (auto policy = MixedPrecisionPolicy::create(mode, d->device, cpuReason(env)); !policy)
        return tl::unexpected(policy.error());
    else
        d->precision = std::move(*policy);
    // FSDP / DeepSpeed: what is sharded, or an error naming the setting the runtime lacks.
    auto plan = shardingPlanFromEnvironment();
    if (!plan)
        return tl::unexpected(plan.error());
    if (auto topology = plan->checkTopology(env.worldSize, env.localWorldSize); !topology)
        return tl::unexpected(topology.error());
    // On a GPU the engine keeps shards, gradients and optimizer state in device memory; moving them
    // to host memory is not implemented.
    if (plan->sharded() && !d->device.is_cpu() && (plan->offloadParameters || plan->offloadOptimizerState))
        return makeError(ErrorCode::Unsupported,
                         plan->describe() + ": CPU offload of parameters on " + d->device.str() +
                             " (fsdp_offload_params, offload_param_device / offload_optimizer_device: cpu) is not "
                             "implemented; turn offload off, or set " +
                             accelerateenv::kUseCpu + "=true to shard on the CPU");
    if (plan->gradientAccumulationSteps > 0 && env.gradientAccumulationSteps == 0)
        d->accumulationSteps = plan->gradientAccumulationSteps;
    d->plan = *plan;
    // Mixed precision fp8: the recipe, whose amaxes are reduced (MAX) over every rank.
    Private *p = d.get();
    auto reduceMax = [p](std::vector<float> &amax) {
        if (!p->group || amax.empty())
            return;
        std::vector<torch::Tensor> tensors{torch::tensor(amax, torch::kFloat)};
        c10d::AllreduceOptions max;
        max.reduceOp = c10d::ReduceOp::MAX;
        runWork(CollectiveKind::AllReduce, [&] { return p->group->allreduce(tensors, max); });
        std::copy_n(tensors[0].data_ptr<float>(), amax.size(), amax.begin());
    };
    if (auto fp8 = d->precision->enableFp8(env.fp8, d->plan, reduceMax); !fp8)
        return tl::unexpected(fp8.error());
    if (env.numThreads > 0)
        at::set_num_threads(env.numThreads);
    if (env.distributed && env.worldSize > 1) {
        if (auto joined = rendezvous(*d); !joined)
            return tl::unexpected(joined.error());
    }
    StrategySetup setup;
    setup.plan = d->plan;
    setup.mesh = DeviceMesh::forPlan(d->plan, env.worldSize, env.localWorldSize);
    setup.env = env;
    setup.group = d->group;
    setup.store = d->store;
    setup.precision = d->precision.get();
    setup.sharedMemory = d->device.is_cpu();
    setup.bucketCapBytes = int64_t(options.bucketCapMb * 1024 * 1024);
    setup.timeoutS = options.collectiveTimeoutS;
    setup.makeGroup = [p](const std::string &name, int rank, int size) {
        // Every model's strategy shares the sub-groups: one group per name.
        auto &group = p->subgroups[name];
        if (!group)
            group = deviceGroup(*p, c10::make_intrusive<c10d::PrefixStore>(name, p->store), rank, size);
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
    if (d->device.is_cuda())
        return cudaPlugin()->allocatedBytes(d->device.index()); // a GPU device: the plugin loaded
    return -1;
}
double Accelerator::lossScale() const
{
    return d->precision->lossScale();
}
MixedPrecision Accelerator::mixedPrecision() const
{
    return d->precision->mode();
}
MixedPrecisionPolicy &Accelerator::precision() const
{
    return *d->precision;
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
