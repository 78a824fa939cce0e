#include "core/runtime/strategy/shardingengine_p.h"
#include "core/runtime/strategy/tensorparallellayout.h"

#include "core/common/fsdpvalues.h"
#include "core/common/log.h"
#include "core/runtime/cudaplugin.h"
#include "core/runtime/precision/fp8allgather.h"
#include "core/runtime/precision/mixedprecisionpolicy.h"
#include "core/runtime/strategy/gradienthooks.h"

#include <ATen/native/Resize.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace accel::runtime {

namespace {

// "accel::worker::(anonymous namespace)::BlockImpl" -> "Block" (Python's class name of a holder).
std::string className(const torch::nn::Module &module)
{
    std::string name = module.name();
    if (const auto colons = name.rfind("::"); colons != std::string::npos)
        name = name.substr(colons + 2);
    if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0)
        name.resize(name.size() - 4);
    return name;
}

void resizeStorage(const torch::Tensor &tensor, int64_t bytes)
{
    if (tensor.device().is_cpu()) {
        at::native::resize_bytes_nocuda(tensor.storage(), bytes);
        return;
    }
    // On a GPU the storage is CUDA's (the device is a GPU only when the CUDA plugin loaded).
    const CudaPlugin *cuda = tensor.device().is_cuda() ? cudaPlugin() : nullptr;
    TORCH_CHECK(cuda && cuda->resizeStorageBytes,
                "releasing a sharded parameter's memory is implemented for CPU "
                "and CUDA tensors, not ",
                tensor.device().str());
    cuda->resizeStorageBytes(tensor.storage().unsafeGetStorageImpl(), size_t(bytes));
}

} // namespace

ShardingEngine::ShardingEngine(ShardingPlan plan, std::unique_ptr<Collectives> shardGroup,
                               std::unique_ptr<Collectives> replicaGroup, MixedPrecisionPolicy *precision)
    : m_plan(std::move(plan)), m_shard(std::move(shardGroup)), m_replica(std::move(replicaGroup)),
      m_precision(precision)
{
    const int world = m_shard->size() * (m_replica ? m_replica->size() : 1);
    m_factors = m_plan.divideFactors(world);
    m_forwardPrefetch = m_plan.forwardPrefetch;
    if (m_plan.backwardPrefetch == fsdp::kBackwardPre)
        m_backwardPrefetch = BackwardPrefetch::Pre;
    else if (m_plan.backwardPrefetch == fsdp::kBackwardPost)
        m_backwardPrefetch = BackwardPrefetch::Post;
}

ShardingEngine::~ShardingEngine()
{
    if (m_prefetches + m_gathers > 0)
        accel::log::debug("runtime", m_plan.strategy + ": " + std::to_string(m_prefetches) + " of " +
                                         std::to_string(m_prefetches + m_gathers) +
                                         " parameter all-gathers prefetched");
    if (m_gatheredBytes + m_codeBytes > 0)
        accel::log::debug("runtime", m_plan.strategy + " (" + m_shard->transport() + "): all-gathered " +
                                         std::to_string(m_gatheredBytes) + " bytes of parameters and " +
                                         std::to_string(m_codeBytes) + " bytes of E4M3 codes of converted weights");
    for (size_t i = 0; i < m_accumulators.size(); ++i)
        m_accumulators[i]->del_post_hook(m_hookKeys[i]);
}

std::string ShardingEngine::gradientTransport() const
{
    return m_shard->size() * (m_replica ? m_replica->size() : 1) > 1 ? m_shard->transport() : "none";
}

bool ShardingEngine::accepts(const torch::nn::Module &module, bool root) const
{
    if (root || m_plan.source != ShardingSource::Fsdp)
        return true; // DeepSpeed partitions every offered module
    switch (m_plan.wrapPolicy) {
    case WrapPolicy::None:
        return false;
    case WrapPolicy::TransformerBlock:
        if (m_plan.wrapClasses.empty())
            return true; // the program's own block class (Accelerate: the model's _no_split_modules)
        for (const auto &name : m_plan.wrapClasses) {
            if (name == className(module))
                return true;
        }
        return false;
    case WrapPolicy::Size: {
        int64_t count = 0;
        for (const auto &p : module.parameters())
            count += p.numel();
        return count >= m_plan.minNumParams;
    }
    }
    return false;
}

void ShardingEngine::prepareModel(const std::shared_ptr<torch::nn::Module> &model,
                                  const std::vector<std::shared_ptr<ShardedModule>> &offered)
{
    if (m_model)
        throw std::logic_error("prepareModel: the sharding engine prepares one model");
    // The weights the precision recipe has gathered as FP8 codes (torchao's float8 all-gather).
    if (m_precision) {
        PrecisionWeightGather gather = m_precision->weightGather(m_plan);
        if (gather.target)
            gatherInFp8(std::move(gather.weights), gather.target);
    }
    m_model = model;
    m_frozen = true;
    for (const auto &p : model->parameters())
        m_frozen = m_frozen && !p.requires_grad();
    for (const auto &item : model->named_parameters())
        m_names.emplace(item.value().unsafeGetTensorImpl(), item.key());
    std::unordered_set<const void *> owned;
    // Units built before prepare (zero3_init_flag) come first, as built.
    std::unordered_set<const ShardedModule *> built;
    for (size_t u = 0; u < m_built.size(); ++u) {
        const torch::nn::Module *module = m_built[u]->module().get();
        bool inside = module == model.get();
        for (const auto &inner : model->modules(/*include_self=*/false))
            inside = inside || inner.get() == module;
        if (!inside)
            throw std::invalid_argument("prepareModel: unit " + m_units[u]->name +
                                        " was built sharded (zero3_init_flag) but is not part of this model; build "
                                        "and prepare one model at a time");
        built.insert(m_built[u].get());
        for (const auto &p : m_units[u]->parameters)
            owned.insert(p.unsafeGetTensorImpl());
        attachUnit(u, true, module == model.get());
    }
    const auto take = [&](torch::nn::Module &module) {
        std::vector<torch::Tensor> mine;
        for (const auto &p : module.parameters()) {
            if (owned.insert(p.unsafeGetTensorImpl()).second)
                mine.push_back(p);
        }
        return mine;
    };
    // Inner units first, in the order offered; the model itself (when offered) last.
    std::shared_ptr<ShardedModule> rootHolder;
    for (const auto &holder : offered) {
        if (built.count(holder.get()))
            continue;
        if (holder->module() == model) {
            rootHolder = holder;
            continue;
        }
        if (!accepts(*holder->module(), false))
            continue;
        auto parameters = take(*holder->module());
        if (parameters.empty())
            continue;
        holder->attach(this, m_units.size());
        m_holders.push_back(holder);
        addUnit(className(*holder->module()) + "#" + std::to_string(m_units.size()), std::move(parameters), true,
                false);
    }
    if (auto rest = take(*model); !rest.empty()) {
        if (rootHolder) {
            rootHolder->attach(this, m_units.size());
            m_holders.push_back(rootHolder);
        }
        addUnit("root", std::move(rest), rootHolder != nullptr, true);
    }
}

void ShardingEngine::addUnit(const std::string &name, std::vector<torch::Tensor> parameters, bool wrapped, bool root)
{
    if (splitFrozen(name, parameters, wrapped, root))
        return; // added as two units: the frozen parameters form the second
    if (splitFp8Weights(name, parameters, wrapped, root))
        return; // added as two units: the converted weights form the second (gatherInFp8)
    torch::NoGradGuard noGrad;
    bool trainable = false;
    for (const auto &p : parameters)
        trainable = trainable || p.requires_grad();
    auto unit = makeUnit(name, std::move(parameters), m_ownChunksOnly && m_plan.stage == 3 && wrapped);
    if (!unit->shard.defined())
        unit->shard = unit->full.narrow(0, m_shard->rank() * unit->chunk, unit->chunk).clone();
    unit->shard.requires_grad_(trainable || m_frozen);
    m_units.push_back(std::move(unit));
    attachUnit(m_units.size() - 1, wrapped, root);
}

std::unique_ptr<ShardingEngine::Unit> ShardingEngine::makeUnit(const std::string &name,
                                                               std::vector<torch::Tensor> parameters,
                                                               bool ownChunkOnly) const
{
    torch::NoGradGuard noGrad;
    auto unit = std::make_unique<Unit>();
    unit->name = name;
    const auto options = parameters.front().options().requires_grad(false);
    int64_t total = 0;
    for (const auto &p : parameters) {
        if (p.scalar_type() != parameters.front().scalar_type() || p.device() != parameters.front().device())
            throw std::invalid_argument("sharding unit " + name +
                                        ": its parameters differ in dtype or device; one flat parameter needs one");
        unit->offsets.push_back(total);
        total += p.numel();
    }
    const int64_t ranks = m_shard->size();
    unit->chunk = (total + ranks - 1) / ranks;
    const int64_t begin = m_shard->rank() * unit->chunk, end = begin + unit->chunk;
    // Own chunk only: `full` is allocated but never written here (only the views need its storage,
    // and release() frees it); the chunk is read straight from the parameters.
    unit->full =
        ownChunkOnly ? torch::empty({unit->chunk * ranks}, options) : torch::zeros({unit->chunk * ranks}, options);
    if (ownChunkOnly)
        unit->shard = torch::zeros({unit->chunk}, options);
    for (size_t i = 0; i < parameters.size(); ++i) {
        auto &p = parameters[i];
        auto view = unit->full.narrow(0, unit->offsets[i], p.numel());
        const int64_t lo = std::max(begin, unit->offsets[i]), hi = std::min(end, unit->offsets[i] + p.numel());
        if (!ownChunkOnly)
            view.copy_(p.reshape({-1}));
        else if (lo < hi)
            unit->shard.narrow(0, lo - begin, hi - lo).copy_(p.reshape({-1}).narrow(0, lo - unit->offsets[i], hi - lo));
        p.set_data(view.view(p.sizes()));
    }
    unit->parameters = std::move(parameters);
    return unit;
}

void ShardingEngine::attachUnit(size_t index, bool wrapped, bool root)
{
    Unit &unit = *m_units[index];
    unit.names.clear();
    unit.trainable = 0;
    for (const auto &p : unit.parameters) {
        const auto known = m_names.find(p.unsafeGetTensorImpl());
        unit.names.push_back(known == m_names.end() ? "?" : known->second);
        unit.trainable += p.requires_grad() ? 1 : 0;
    }
    unit.shardParameters = m_plan.stage == 3 && wrapped;
    // A frozen model's units are not needed until a backward that passes through them re-gathers
    // them: released after every forward, the root too.
    unit.reshardAfterForward = unit.shardParameters && ((m_plan.reshardAfterForward && !root) || m_frozen);
    for (const auto &p : unit.parameters) {
        if (!p.requires_grad())
            continue;
        auto accumulator = torch::autograd::impl::grad_accumulator(p);
        m_hookKeys.push_back(
            accumulator->add_post_hook(std::make_unique<GradientReadyHook>([this, index] { markReady(index); })));
        m_accumulators.push_back(std::move(accumulator));
    }
    if (unit.shardParameters)
        release(unit);
}

void ShardingEngine::buildUnit(const std::shared_ptr<ShardedModule> &holder)
{
    if (m_model)
        throw std::logic_error("ShardingEngine::buildUnit: the model is prepared already");
    if (!m_broadcast)
        throw std::logic_error("ShardingEngine::buildUnit: no broadcast set (setBroadcast)");
    std::unordered_set<const void *> owned;
    for (const auto &unit : m_units) {
        for (const auto &p : unit->parameters)
            owned.insert(p.unsafeGetTensorImpl());
    }
    std::vector<torch::Tensor> parameters;
    for (const auto &p : holder->module()->parameters()) {
        if (owned.insert(p.unsafeGetTensorImpl()).second)
            parameters.push_back(p);
    }
    if (parameters.empty())
        return;
    torch::NoGradGuard noGrad;
    auto unit = makeUnit(className(*holder->module()) + "#" + std::to_string(m_units.size()), std::move(parameters));
    m_broadcast(unit->full);
    unit->shard = unit->full.narrow(0, m_shard->rank() * unit->chunk, unit->chunk).clone().requires_grad_(true);
    unit->shardParameters = m_plan.stage == 3;
    holder->attach(this, m_units.size());
    m_holders.push_back(holder);
    m_built.push_back(holder);
    m_units.push_back(std::move(unit));
    if (m_units.back()->shardParameters)
        release(*m_units.back());
}

std::vector<torch::Tensor> ShardingEngine::builtParameters() const
{
    std::vector<torch::Tensor> parameters;
    for (size_t u = 0; u < m_built.size(); ++u) {
        for (const auto &p : m_units[u]->parameters)
            parameters.push_back(p);
    }
    return parameters;
}

void ShardingEngine::modifyUnit(size_t index, const std::function<void()> &change)
{
    if (!m_broadcast)
        throw std::logic_error("ShardingEngine::modifyUnit: no broadcast set (setBroadcast)");
    Unit &unit = *m_units[index];
    if (unit.fp8 || unit.companion)
        throw std::logic_error("ShardedModule::modify: unit " + unit.name +
                               " is more than one flat parameter (FP8 Linear weights that FSDP2's float8 all-gather "
                               "gathers as E4M3 codes, or frozen parameters beside trained ones); change them before "
                               "prepareModel(), or set enable_fsdp_float8_all_gather: false");
    const bool released = !unit.gathered;
    ensureGathered(unit);
    change();
    torch::NoGradGuard noGrad;
    m_broadcast(unit.full);
    unit.shard.detach().copy_(unit.full.narrow(0, m_shard->rank() * unit.chunk, unit.chunk));
    if (released)
        release(unit);
}

void ShardingEngine::gatherInFp8(std::vector<torch::Tensor> weights, Fp8GatheredWeights *target)
{
    if (m_model)
        throw std::logic_error("gatherInFp8: call before prepareModel");
    m_fp8Weights = std::move(weights);
    m_fp8Target = target;
}

// A unit whose parameters are partly frozen (LoRA: the adapters train, the base does not) is added
// as two: the trained parameters, stepped and reduced as usual, and the frozen ones, a flat
// parameter of their own (in their own dtype) that is gathered and released with it and never
// reduced, stepped or given optimizer state. Its chain of companions ends with the frozen unit.
bool ShardingEngine::splitFrozen(const std::string &name, const std::vector<torch::Tensor> &parameters, bool wrapped,
                                 bool root)
{
    std::vector<torch::Tensor> trained, frozen;
    for (const auto &p : parameters)
        (p.requires_grad() ? trained : frozen).push_back(p);
    if (trained.empty() || frozen.empty())
        return false;
    const size_t lead = m_units.size();
    addUnit(name, std::move(trained), wrapped, root);
    const size_t rest = m_units.size();
    addUnit(name + " frozen", std::move(frozen), wrapped, root);
    Unit *last = m_units[lead].get();
    while (last->companion)
        last = last->companion;
    last->companion = m_units[rest].get();
    return true;
}

// A sharded unit holding converted weights (gatherInFp8) is added as two: the other parameters
// (the unit its holder runs, if any) and the converted weights, whose unit is its companion.
bool ShardingEngine::splitFp8Weights(const std::string &name, const std::vector<torch::Tensor> &parameters,
                                     bool wrapped, bool root)
{
    if (m_fp8Weights.empty() || m_splitting || !(m_plan.stage == 3 && wrapped))
        return false;
    std::vector<torch::Tensor> rest, converted;
    for (const auto &p : parameters) {
        const bool isConverted = std::any_of(m_fp8Weights.begin(), m_fp8Weights.end(),
                                             [&p](const torch::Tensor &w) { return w.is_same(p); });
        (isConverted ? converted : rest).push_back(p);
    }
    if (converted.empty())
        return false;
    m_splitting = true;
    Unit *lead = nullptr;
    if (!rest.empty()) {
        addUnit(name, std::move(rest), wrapped, root);
        lead = m_units.back().get();
    }
    addUnit(name + " FP8 weights", std::move(converted), wrapped, root);
    m_splitting = false;
    Unit &unit = *m_units.back(); // released by addUnit: its float32 flat is never gathered again
    unit.fp8 = true;
    unit.codes = torch::zeros({unit.chunk * m_shard->size()}, unit.shard.options().dtype(torch::kUInt8));
    resizeStorage(unit.codes, 0);
    if (lead)
        lead->companion = &unit;
    return true;
}

void ShardingEngine::prepareOptimizer(torch::optim::Optimizer &optimizer)
{
    if (!optimizer.state().empty())
        throw std::logic_error("prepareOptimizer: the optimizer has state already; prepare it before its first step");
    std::unordered_map<const void *, size_t> ownerOf;
    for (size_t u = 0; u < m_units.size(); ++u) {
        for (const auto &p : m_units[u]->parameters)
            ownerOf[p.unsafeGetTensorImpl()] = u;
    }
    std::vector<int> groupOf(m_units.size(), -1);
    std::vector<size_t> seen(m_units.size(), 0);
    auto &groups = optimizer.param_groups();
    for (size_t g = 0; g < groups.size(); ++g) {
        std::vector<torch::Tensor> replaced;
        for (const auto &p : groups[g].params()) {
            auto it = ownerOf.find(p.unsafeGetTensorImpl());
            if (it == ownerOf.end()) {
                replaced.push_back(p); // not this model's: stepped as it is
                continue;
            }
            const size_t u = it->second;
            if (groupOf[u] != -1 && groupOf[u] != int(g))
                throw std::invalid_argument(
                    "prepareOptimizer: sharding unit " + m_units[u]->name +
                    " has parameters in two optimizer parameter groups; a unit is one flat parameter and needs one "
                    "group (wrap the modules so that each unit's parameters share their options)");
            if (groupOf[u] == -1)
                replaced.push_back(m_units[u]->shard);
            groupOf[u] = int(g);
            ++seen[u];
        }
        groups[g].params() = replaced;
    }
    for (size_t u = 0; u < m_units.size(); ++u) {
        if (seen[u] != 0 && seen[u] != m_units[u]->trainable)
            throw std::invalid_argument("prepareOptimizer: sharding unit " + m_units[u]->name + " has " +
                                        std::to_string(m_units[u]->trainable) + " trainable parameters but " +
                                        std::to_string(seen[u]) + " of them are in the optimizer");
    }
}

void ShardingEngine::gather(Unit &unit)
{
    if (unit.fp8) {
        gatherCodes(unit);
        return;
    }
    torch::NoGradGuard noGrad;
    finishPrefetch(unit);
    if (!unit.gathered)
        resizeStorage(unit.full, unit.full.numel() * int64_t(unit.full.element_size()));
    m_shard->allGather(unit.full, unit.shard.detach());
    unit.gathered = true;
    ++m_gathers;
    m_gatheredBytes += unit.full.numel() * int64_t(unit.full.element_size());
}

// The converted weights' unit as E4M3 codes (fp8allgather.h): one all-gather of every rank's
// amaxes of its parts (their maximum: each whole weight's amax), one of the codes.
void ShardingEngine::gatherCodes(Unit &unit)
{
    torch::NoGradGuard noGrad;
    Fp8FlatLayout layout;
    layout.offsets = unit.offsets;
    for (const auto &p : unit.parameters)
        layout.numels.push_back(p.numel());
    const int64_t begin = m_shard->rank() * unit.chunk;
    const torch::Tensor shard = unit.shard.detach();
    const std::vector<float> mine = fp8ChunkAmax(shard, begin, layout);
    const auto n = int64_t(mine.size());
    const auto floats = shard.options().dtype(torch::kFloat);
    auto every = torch::empty({m_shard->size() * n}, floats);
    m_shard->allGather(every, torch::tensor(mine, torch::kFloat).to(floats.device()));
    const torch::Tensor amax = every.view({m_shard->size(), n}).amax(0).cpu().contiguous();
    std::vector<float> scales;
    for (int64_t i = 0; i < n; ++i)
        scales.push_back(m_fp8Target->weightScale(amax.data_ptr<float>()[i]));
    if (!unit.gathered)
        resizeStorage(unit.codes, unit.codes.numel());
    m_shard->allGather(unit.codes, fp8CastChunk(shard, begin, layout, scales));
    unit.gathered = true;
    ++m_gathers;
    m_codeBytes += unit.codes.numel();
    for (size_t i = 0; i < unit.parameters.size(); ++i) {
        const auto &p = unit.parameters[i];
        // A version counter of its own: the re-gather in backward rewrites the buffer the forward's
        // saved codes view.
        auto codes = unit.codes.narrow(0, unit.offsets[i], p.numel()).view(float8Dtype(Fp8Format::E4M3));
        m_fp8Target->setGathered(p, {codes.view(p.sizes()).variable_data(), scales[i]});
    }
}

void ShardingEngine::finishPrefetch(Unit &unit)
{
    if (!unit.pending)
        return;
    Collectives::Pending pending = std::move(unit.pending);
    unit.pending = nullptr;
    pending();
}

void ShardingEngine::ensureGathered(Unit &unit)
{
    if (unit.pending)
        finishPrefetch(unit);
    else if (!unit.gathered)
        gather(unit);
    if (unit.companion)
        ensureGathered(*unit.companion);
}

void ShardingEngine::prefetch(const std::unordered_map<size_t, size_t> &next, size_t after)
{
    const auto it = next.find(after);
    if (it == next.end())
        return;
    Unit &unit = *m_units[it->second];
    if (!unit.shardParameters || unit.gathered || unit.fp8)
        return;
    torch::NoGradGuard noGrad;
    resizeStorage(unit.full, unit.full.numel() * int64_t(unit.full.element_size()));
    unit.pending = m_shard->allGatherAsync(unit.full, unit.shard.detach());
    unit.gathered = true;
    ++m_prefetches;
    m_gatheredBytes += unit.full.numel() * int64_t(unit.full.element_size());
}

void ShardingEngine::recordOrder(std::vector<size_t> &order, std::unordered_map<size_t, size_t> &next, size_t unit)
{
    if (!m_recording || !m_units[unit]->shardParameters)
        return;
    if (!order.empty())
        next.emplace(order.back(), unit); // a unit run twice keeps its first successor
    order.push_back(unit);
}

void ShardingEngine::release(Unit &unit)
{
    if (!unit.gathered)
        return;
    finishPrefetch(unit);
    if (unit.fp8) {
        for (const auto &p : unit.parameters)
            m_fp8Target->setGathered(p, {});
        resizeStorage(unit.codes, 0);
    } else {
        resizeStorage(unit.full, 0);
    }
    unit.gathered = false;
}

void ShardingEngine::beforeForward(size_t index)
{
    Unit &unit = *m_units[index];
    if (!unit.shardParameters)
        return;
    ensureGathered(unit);
    recordOrder(m_forwardOrder, m_nextForward, index);
    if (m_forwardPrefetch && !m_recording)
        prefetch(m_nextForward, index);
}

void ShardingEngine::afterForward(size_t index, const at::Tensor &output)
{
    Unit &unit = *m_units[index];
    if (!unit.shardParameters)
        return;
    if (torch::GradMode::is_enabled() && output.requires_grad()) {
        // Backward reaches this unit when the gradient of its output is known: gather again.
        const_cast<at::Tensor &>(output).register_hook([this, index](const torch::Tensor &) {
            // The units backward has passed (their inputs' gradients are complete once this
            // output's is) no longer need their frozen parameters.
            releaseFrozenCompanions();
            ensureGathered(*m_units[index]);
            if (m_units[index]->companion)
                m_frozenInBackward.push_back(index);
            recordOrder(m_backwardOrder, m_nextBackward, index);
            if (m_backwardPrefetch == BackwardPrefetch::Pre && !m_recording)
                prefetch(m_nextBackward, index);
        });
    }
    if (unit.reshardAfterForward) {
        for (Unit *u = &unit; u; u = u->companion)
            release(*u);
    }
}

void ShardingEngine::releaseFrozenCompanions()
{
    for (size_t index : m_frozenInBackward) {
        for (Unit *u = m_units[index]->companion; u; u = u->companion) {
            if (u->trainable == 0 && u->shardParameters && u->reshardAfterForward)
                release(*u);
        }
    }
    m_frozenInBackward.clear();
}

void ShardingEngine::markReady(size_t index)
{
    Unit &unit = *m_units[index];
    if (++unit.ready < unit.trainable)
        return;
    if (m_sync && !unit.reduced)
        reduce(unit);
    if (unit.shardParameters) {
        release(unit);
        if (m_backwardPrefetch == BackwardPrefetch::Post && !m_recording)
            prefetch(m_nextBackward, index);
    }
}

void ShardingEngine::zeroGrad()
{
    for (auto &unit : m_units) {
        unit->shard.mutable_grad() = torch::Tensor();
        for (auto &p : unit->parameters)
            p.mutable_grad() = torch::Tensor();
    }
}

void ShardingEngine::unshardModel()
{
    for (auto &unit : m_units) {
        if (unit->fp8) { // whole float32 weights from now on (the FP8 Linear quantises them itself)
            release(*unit);
            unit->fp8 = false;
        }
    }
    for (auto &unit : m_units) {
        ensureGathered(*unit);
        unit->shardParameters = unit->reshardAfterForward = false;
    }
    for (auto &holder : m_holders)
        holder->attach(nullptr, 0);
}

bool ShardingEngine::shardsParameters() const
{
    for (const auto &unit : m_units) {
        if (unit->shardParameters)
            return true;
    }
    return false;
}

std::vector<torch::Tensor> ShardingEngine::heldParameters() const
{
    std::vector<torch::Tensor> tensors;
    for (const auto &unit : m_units) {
        tensors.push_back(unit->full);
        tensors.push_back(unit->shard);
    }
    return tensors;
}

} // namespace accel::runtime
