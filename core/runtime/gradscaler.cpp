#include "core/runtime/gradscaler.h"

namespace accel::runtime {

GradScaler::GradScaler(torch::Device device, GradScalerOptions options) : m_options(options)
{
    const auto floats = torch::TensorOptions().dtype(torch::kFloat).device(device);
    m_scale = torch::full({1}, options.initScale, floats);
    m_growthTracker = torch::zeros({1}, floats.dtype(torch::kInt));
    m_foundInf = torch::zeros({1}, floats);
}

torch::Tensor GradScaler::scale(const torch::Tensor &loss) const
{
    return loss * m_scale.to(loss.device());
}

void GradScaler::unscale(const std::vector<torch::Tensor> &parameters)
{
    if (m_unscaled)
        return;
    std::vector<torch::Tensor> grads;
    for (const auto &parameter : parameters) {
        if (parameter.grad().defined())
            grads.push_back(parameter.grad());
    }
    m_foundInf.zero_();
    const torch::Tensor inverse = m_scale.to(torch::kDouble).reciprocal().to(torch::kFloat); // as GradScaler does
    torch::NoGradGuard noGrad;
    // libtorch groups the list by device and dtype itself.
    if (!grads.empty())
        at::_amp_foreach_non_finite_check_and_unscale_(grads, m_foundInf, inverse);
    m_unscaled = true;
}

bool GradScaler::step(const std::vector<torch::Tensor> &parameters, const std::function<void()> &optimizerStep)
{
    unscale(parameters);
    const bool finite = m_foundInf.item<float>() == 0.0f;
    if (finite)
        optimizerStep();
    at::_amp_update_scale_(m_scale, m_growthTracker, m_foundInf, m_options.growthFactor, m_options.backoffFactor,
                           m_options.growthInterval);
    m_unscaled = false;
    return finite;
}

void GradScaler::load(double scale, int64_t growthTracker)
{
    m_scale.fill_(scale);
    m_growthTracker.fill_(growthTracker);
    m_unscaled = false;
}

} // namespace accel::runtime
