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
    m_skipped = !m_accelerator.stepOptimizer(*this);
    if (!m_skipped)
        ++m_steps;
}

void AcceleratedOptimizer::zeroGrad()
{
    if (!m_accelerator.syncGradients())
        return;
    m_accelerator.zeroGradients(*this);
    // set_to_none (Accelerate's default): libtorch 1.13's zero_grad() would first write zeros.
    for (auto &group : m_optimizer.param_groups()) {
        for (auto &parameter : group.params())
            parameter.mutable_grad() = torch::Tensor();
    }
}

bool Accelerator::stepOptimizer(AcceleratedOptimizer &optimizer)
{
    const std::vector<size_t> &models = d->modelsOf(optimizer);
    for (size_t m : models)
        d->models[m].strategy->finishGradients();
    if (d->plan.gradientClipping > 0) // DeepSpeed's gradient_clipping: each engine clips its model in step()
        d->clip(models, d->plan.gradientClipping, 2.0);
    // A step with inf/NaN gradients is skipped under fp16 (the scale backs off), as GradScaler.step does.
    if (!d->precision->step(optimizer.optimizer()))
        return false;
    d->precision->afterOptimizerStep();
    for (size_t m : models)
        d->models[m].strategy->afterOptimizerStep(); // ZeRO: every rank takes the updated shards
    return true;
}

void Accelerator::zeroGradients(AcceleratedOptimizer &optimizer)
{
    for (size_t m : d->modelsOf(optimizer))
        d->models[m].strategy->zeroGrad();
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
