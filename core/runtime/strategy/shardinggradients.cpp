// ShardingEngine's gradients after backward: the reduce-scatter of each unit's gradients into this
// rank's shard, the global norm over every shard (and the tensor-parallel pieces), clipping and
// scaling, and what follows the optimizer step. The rest of the engine is in shardingengine.cpp.
#include "core/runtime/strategy/shardingengine_p.h"
#include "core/runtime/strategy/tensorparallellayout.h"

#include "core/runtime/precision/mixedprecisionpolicy.h"

#include <algorithm>
#include <cmath>

namespace accel::runtime {

void ShardingEngine::reduce(Unit &unit)
{
    torch::NoGradGuard noGrad;
    unit.reduced = true;
    auto flat = torch::zeros({unit.chunk * m_shard->size()}, unit.shard.options().requires_grad(false));
    for (size_t i = 0; i < unit.parameters.size(); ++i) {
        auto &p = unit.parameters[i];
        if (p.grad().defined())
            flat.narrow(0, unit.offsets[i], p.numel()).copy_(p.grad().reshape({-1}));
        if (m_plan.stage >= 2)
            p.mutable_grad() = torch::Tensor();
    }
    if (m_factors.pre > 1)
        flat.div_(m_factors.pre);
    torch::Tensor grad;
    if (m_plan.stage == 1) {
        // ZeRO-1 keeps whole gradients: every rank gets the average, the parameters' gradients
        // view it and the optimizer's shard sees its own chunk.
        m_shard->allReduceSum(flat);
        if (m_factors.post > 1)
            flat.div_(m_factors.post);
        for (size_t i = 0; i < unit.parameters.size(); ++i) {
            auto &p = unit.parameters[i];
            p.mutable_grad() = flat.narrow(0, unit.offsets[i], p.numel()).view(p.sizes());
        }
        grad = flat.narrow(0, m_shard->rank() * unit.chunk, unit.chunk);
    } else {
        grad = torch::empty({unit.chunk}, flat.options());
        m_shard->reduceScatterSum(grad, flat);
        if (m_replica)
            m_replica->allReduceSum(grad);
        if (m_factors.post > 1)
            grad.div_(m_factors.post);
    }
    if (unit.shard.grad().defined())
        unit.shard.mutable_grad().add_(grad);
    else
        unit.shard.mutable_grad() = grad;
}

void ShardingEngine::afterBackward(bool sync)
{
    m_frozenInBackward.clear();
    for (auto &unit : m_units) {
        // Units whose parameters got no gradient still take part (as zeros), in unit order.
        if (sync && unit->trainable > 0 && !unit->reduced)
            reduce(*unit);
        if (unit->shardParameters)
            release(*unit);
        unit->ready = 0;
        unit->reduced = false;
    }
    m_recording = false;
}

double ShardingEngine::gradientNormPart(double normType)
{
    torch::NoGradGuard noGrad;
    const bool infinity = std::isinf(normType);
    const auto add = [&](double &sum, const torch::Tensor &gradient) {
        const double n = gradient.to(torch::kDouble).norm(normType).item<double>();
        sum = infinity ? std::max(sum, n) : sum + std::pow(n, normType);
    };
    // Tensor parallelism: a split parameter's parts differ on the ranks of the tp group, the other
    // parameters' gradients are the same there; each parameter's piece of this rank's chunk counts
    // to one or the other.
    const auto layout = m_model ? tensorParallelLayout(*m_model) : nullptr;
    double local = 0, split = 0;
    for (auto &unit : m_units) {
        if (!unit->shard.grad().defined())
            continue;
        if (!layout) {
            add(local, unit->shard.grad());
            continue;
        }
        const int64_t begin = int64_t(m_shard->rank()) * unit->chunk, end = begin + unit->chunk;
        for (size_t i = 0; i < unit->parameters.size(); ++i) {
            const int64_t lo = std::max(begin, unit->offsets[i]),
                          hi = std::min(end, unit->offsets[i] + unit->parameters[i].numel());
            if (lo < hi)
                add(layout->splitDims.count(unit->names[i]) ? split : local,
                    unit->shard.grad().narrow(0, lo - begin, hi - lo));
        }
    }
    // Every rank's chunks are distinct: the norm's parts add up (or take the maximum) across ranks.
    // The parts travel on the parameters' device (NCCL takes GPU tensors only).
    const auto doubles = torch::TensorOptions()
                             .dtype(torch::kDouble)
                             .device(m_units.empty() ? torch::Device(torch::kCPU) : m_units.front()->shard.device());
    const auto combine = [&](Collectives *group, double value) {
        auto parts = torch::zeros({group->size()}, doubles);
        auto mine = torch::tensor({value}, torch::kDouble).to(doubles.device());
        group->allGather(parts, mine);
        return infinity ? parts.max().item<double>() : parts.sum().item<double>();
    };
    double total = combine(m_shard.get(), local);
    if (layout) {
        split = combine(m_shard.get(), split);
        auto parts = torch::zeros({layout->size}, doubles);
        layout->allGather(parts, torch::tensor({split}, torch::kDouble).to(doubles.device()));
        split = infinity ? parts.max().item<double>() : parts.sum().item<double>();
        total = infinity ? std::max(total, split) : total + split;
    }
    return total;
}

void ShardingEngine::scaleGradients(double factor)
{
    torch::NoGradGuard noGrad;
    for (auto &unit : m_units) {
        if (unit->shard.grad().defined())
            unit->shard.mutable_grad().mul_(factor);
    }
}

double ShardingEngine::clipGradNorm(double maxNorm, double normType)
{
    const double part = gradientNormPart(normType);
    const double total = std::isinf(normType) ? part : std::pow(part, 1.0 / normType);
    const double coefficient = maxNorm / (total + 1e-6);
    if (coefficient < 1)
        scaleGradients(coefficient);
    return total;
}

void ShardingEngine::afterOptimizerStep()
{
    // Whole copies (ZeRO-1/2 units, gathered ZeRO-3 units) take the updated chunks now; released
    // ZeRO-3 units gather theirs before the next forward.
    for (auto &unit : m_units) {
        if (unit->gathered && unit->trainable > 0) // frozen units keep their values
            gather(*unit);
    }
}

} // namespace accel::runtime
