// The optimizer and scheduler wrappers prepare() returns (training.h).
#include "core/runtime/accelerator_p.h"

namespace accel::runtime {

AcceleratedOptimizer::AcceleratedOptimizer(Accelerator &accelerator, torch::optim::Optimizer &optimizer)
    : m_accelerator(accelerator), m_optimizer(optimizer)
{}

void AcceleratedOptimizer::step()
{
    if (!m_accelerator.syncGradients())
        return;
    auto &impl = m_accelerator.impl();
    const std::vector<size_t> &models = impl.modelsOf(*this);
    for (size_t m : models)
        impl.models[m].strategy->finishGradients();
    if (impl.plan.gradientClipping > 0) // DeepSpeed's gradient_clipping: each engine clips its model in step()
        impl.clip(models, impl.plan.gradientClipping, 2.0);
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
    for (size_t m : models)
        impl.models[m].strategy->afterOptimizerStep(); // ZeRO: every rank takes the updated shards
}

void AcceleratedOptimizer::zeroGrad()
{
    if (!m_accelerator.syncGradients())
        return;
    auto &impl = m_accelerator.impl();
    for (size_t m : impl.modelsOf(*this))
        impl.models[m].strategy->zeroGrad();
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
