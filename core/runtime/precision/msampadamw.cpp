#include "core/runtime/precision/msampadamw.h"

#include "core/runtime/precision/fp8scaling.h"
#include "core/runtime/precision/fp8tensor.h"

#include <cmath>
#include <stdexcept>

namespace accel::runtime {

namespace {

struct Options {
    double lr, beta1, beta2, eps, weightDecay;
    bool amsgrad;
};

Options optionsOf(const torch::optim::OptimizerOptions &options, bool *decoupled)
{
    if (auto *adamw = dynamic_cast<const torch::optim::AdamWOptions *>(&options)) {
        *decoupled = true;
        return {adamw->lr(),  std::get<0>(adamw->betas()), std::get<1>(adamw->betas()),
                adamw->eps(), adamw->weight_decay(),       adamw->amsgrad()};
    }
    if (auto *adam = dynamic_cast<const torch::optim::AdamOptions *>(&options)) {
        *decoupled = false;
        return {adam->lr(),  std::get<0>(adam->betas()), std::get<1>(adam->betas()),
                adam->eps(), adam->weight_decay(),       adam->amsgrad()};
    }
    throw std::invalid_argument("fp8 MS-AMP: the optimizer must be Adam or AdamW (as msamp.initialize requires)");
}

std::vector<torch::optim::OptimizerParamGroup> copyGroups(torch::optim::Optimizer &original)
{
    std::vector<torch::optim::OptimizerParamGroup> groups;
    for (auto &group : original.param_groups())
        groups.emplace_back(group.params(), group.options().clone());
    return groups;
}

constexpr float fp16Max = 65504.0f;

} // namespace

MsAmpAdamW::MsAmpAdamW(torch::optim::Optimizer &original, MsAmpLevel level)
    : torch::optim::Optimizer(copyGroups(original), original.defaults().clone()), m_level(level)
{
    for (auto &group : param_groups()) {
        if (optionsOf(group.options(), &m_decoupled).amsgrad)
            throw std::invalid_argument("fp8 MS-AMP: amsgrad is not supported");
    }
}

torch::Tensor MsAmpAdamW::step(LossClosure closure)
{
    torch::NoGradGuard noGrad;
    torch::Tensor loss;
    if (closure) {
        torch::AutoGradMode enable(true);
        loss = closure();
    }
    for (auto &group : param_groups()) {
        bool decoupled = true;
        const Options o = optionsOf(group.options(), &decoupled);
        for (auto &p : group.params()) {
            if (!p.grad().defined())
                continue;
            auto grad = p.grad().to(torch::kFloat);
            Moments &m = m_moments[p.unsafeGetTensorImpl()];
            torch::Tensor first, second;
            if (m.step == 0) {
                first = torch::zeros_like(grad);
                second = torch::zeros_like(grad);
            } else if (m_level == MsAmpLevel::O2) {
                first = dequantize({m.first, m.firstScale});
                second = m.second.to(torch::kFloat) / m.secondScale;
            } else {
                first = m.first;
                second = m.second;
            }
            ++m.step;
            if (decoupled)
                p.mul_(1.0 - o.lr * o.weightDecay);
            else if (o.weightDecay != 0)
                grad = grad + o.weightDecay * p.to(torch::kFloat);
            first.mul_(o.beta1).add_(grad, 1.0 - o.beta1);
            second.mul_(o.beta2).addcmul_(grad, grad, 1.0 - o.beta2);
            const double correction1 = 1.0 - std::pow(o.beta1, double(m.step));
            const double correction2 = 1.0 - std::pow(o.beta2, double(m.step));
            auto denominator = (second.sqrt() / std::sqrt(correction2)).add_(o.eps);
            p.addcdiv_(first.to(p.scalar_type()), denominator.to(p.scalar_type()), -o.lr / correction1);
            if (m_level == MsAmpLevel::O2) {
                m.firstScale = powerOfTwoScalingFactor(absMax(first), m.firstScale, fp8MaxFinite(Fp8Format::E4M3));
                m.first = quantize(first, Fp8Format::E4M3, m.firstScale).data;
                m.secondScale = powerOfTwoScalingFactor(absMax(second), m.secondScale, fp16Max);
                m.second = (second * m.secondScale).to(torch::kHalf);
            } else {
                m.first = first;
                m.second = second;
            }
        }
    }
    return loss;
}

int64_t MsAmpAdamW::momentBytes() const
{
    int64_t bytes = 0;
    for (const auto &[key, m] : m_moments) {
        (void)key;
        if (m.first.defined())
            bytes += int64_t(m.first.nbytes() + m.second.nbytes());
    }
    return bytes;
}

} // namespace accel::runtime
