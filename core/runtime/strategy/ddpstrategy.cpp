#include "core/runtime/strategy/ddpstrategy.h"

#include "core/common/log.h"
#include "core/runtime/accelerator_p.h"
#include "core/runtime/precision/fp8allreduce.h"

#include <cmath>

namespace accel::runtime {

DdpStrategy::DdpStrategy(std::string name, c10::intrusive_ptr<c10d::Backend> group,
                         c10::intrusive_ptr<c10d::Store> store, const DistributedEnv &env, int64_t bucketCapBytes,
                         double timeoutS)
    : m_name(std::move(name)), m_group(std::move(group)), m_store(std::move(store)), m_env(env),
      m_bucketCapBytes(bucketCapBytes), m_timeoutS(timeoutS)
{}

DdpStrategy::~DdpStrategy() = default;

std::string DdpStrategy::gradientTransport() const
{
    if (!m_sync)
        return "none";
    return m_sync->usesSharedMemory() ? "shared-memory" : "process-group";
}

void DdpStrategy::prepareModel(const std::shared_ptr<torch::nn::Module> &model,
                               const std::vector<std::shared_ptr<ShardedModule>> &units)
{
    m_model = model;
    if (!m_group)
        return;
    std::vector<torch::Tensor> trainable;
    for (auto &parameter : model->parameters()) {
        const bool inFp8 = std::any_of(m_fp8Weights.begin(), m_fp8Weights.end(),
                                       [&](const torch::Tensor &w) { return w.is_same(parameter); });
        if (parameter.requires_grad() && !inFp8)
            trainable.push_back(parameter);
    }
    if (!m_fp8Weights.empty()) {
        auto group = m_group;
        const int worldSize = m_env.worldSize;
        m_fp8 = std::make_unique<Fp8GradientAllReduce>(
            m_fp8Weights, worldSize,
            [group](std::vector<float> &amax) {
                std::vector<torch::Tensor> tensors{torch::tensor(amax, torch::kFloat)};
                c10d::AllreduceOptions max;
                max.reduceOp = c10d::ReduceOp::MAX;
                runWork([&] { return group->allreduce(tensors, max); });
                std::copy_n(tensors[0].data_ptr<float>(), amax.size(), amax.begin());
            },
            [group, worldSize](const torch::Tensor &bytes) {
                std::vector<torch::Tensor> input{bytes.contiguous()};
                std::vector<std::vector<torch::Tensor>> output(1);
                for (int r = 0; r < worldSize; ++r)
                    output[0].push_back(torch::empty_like(input[0]));
                runWork([&] { return group->allgather(output, input); });
                return output[0];
            });
    }
    if (trainable.empty())
        return;
    m_sync = std::make_unique<GradientSync>(m_group, trainable, m_bucketCapBytes);
    // CPU ranks that share this host sum gradients through shared memory (shmallreduce.h).
    if (trainable.front().device().is_cpu() && m_sync->singleDtype()) {
        std::string why;
        auto shm = ShmAllReduce::create(*m_store, m_env.rank, m_env.worldSize, m_sync->bucketElements(),
                                        trainable.front().scalar_type(), m_timeoutS, &why);
        if (shm)
            m_sync->useSharedMemory(std::move(shm));
        else
            accel::log::debug("runtime", "gradients through the process group: " + why);
    }
}

void DdpStrategy::setSyncEnabled(bool enabled)
{
    if (m_sync)
        m_sync->setEnabled(enabled);
}

void DdpStrategy::reduceInFp8(std::vector<torch::Tensor> weights)
{
    if (m_model)
        throw std::logic_error("reduceInFp8: call before prepareModel");
    m_fp8Weights = std::move(weights);
}

void DdpStrategy::afterBackward(bool sync)
{
    if (m_sync && sync)
        m_sync->finish();
    if (m_fp8 && sync)
        m_fp8->reduce();
}

void DdpStrategy::finishGradients()
{
    if (m_sync)
        m_sync->finish();
}

double DdpStrategy::clipGradNorm(double maxNorm, double normType)
{
    if (!m_model)
        throw std::logic_error("clipGradNorm: prepare a model first");
    finishGradients();
    return torch::nn::utils::clip_grad_norm_(m_model->parameters(), maxNorm, normType);
}

double DdpStrategy::gradientNormPart(double normType)
{
    if (!m_model)
        throw std::logic_error("clipGradNorm: prepare a model first");
    finishGradients();
    torch::NoGradGuard noGrad;
    const bool infinity = std::isinf(normType);
    double part = 0;
    for (const auto &p : m_model->parameters()) {
        if (!p.grad().defined())
            continue;
        const double n = p.grad().to(torch::kDouble).norm(normType).item<double>();
        part = infinity ? std::max(part, n) : part + std::pow(n, normType);
    }
    return part;
}

void DdpStrategy::scaleGradients(double factor)
{
    torch::NoGradGuard noGrad;
    for (auto &p : m_model->parameters()) {
        if (p.grad().defined())
            p.mutable_grad().mul_(factor);
    }
}

} // namespace accel::runtime
