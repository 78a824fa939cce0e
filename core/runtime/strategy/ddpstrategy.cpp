#include "core/runtime/strategy/ddpstrategy.h"

#include "core/runtime/precision/gradientreduction.h"
#include "core/runtime/precision/mixedprecisionpolicy.h"
#include "core/runtime/strategy/gradientsync.h"

#include <cmath>

namespace accel::runtime {

DdpStrategy::DdpStrategy(std::string name, std::unique_ptr<Collectives> group, MixedPrecisionPolicy *precision,
                         int64_t bucketCapBytes)
    : m_name(std::move(name)), m_group(std::move(group)), m_precision(precision), m_bucketCapBytes(bucketCapBytes)
{}

DdpStrategy::~DdpStrategy() = default;

std::string DdpStrategy::gradientTransport() const
{
    return m_sync ? m_sync->transport() : "none";
}

void DdpStrategy::prepareModel(const std::shared_ptr<torch::nn::Module> &model,
                               const std::vector<std::shared_ptr<ShardedModule>> &units)
{
    m_model = model;
    if (!m_group)
        return;
    // Gradients the precision recipe reduces in its own format (MS-AMP: FP8) stay out of the float mean.
    if (m_precision)
        m_lowPrecision = m_precision->gradientReduction(*m_group);
    std::vector<torch::Tensor> trainable;
    for (auto &parameter : model->parameters()) {
        const bool own =
            m_lowPrecision && std::any_of(m_lowPrecision->weights().begin(), m_lowPrecision->weights().end(),
                                          [&](const torch::Tensor &w) { return w.is_same(parameter); });
        if (parameter.requires_grad() && !own)
            trainable.push_back(parameter);
    }
    if (trainable.empty())
        return;
    m_sync = std::make_unique<GradientSync>(*m_group, trainable, m_bucketCapBytes);
}

void DdpStrategy::setSyncEnabled(bool enabled)
{
    if (m_sync)
        m_sync->setEnabled(enabled);
}

void DdpStrategy::afterBackward(bool sync)
{
    if (m_sync && sync)
        m_sync->finish();
    if (m_lowPrecision && sync)
        m_lowPrecision->reduce();
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
