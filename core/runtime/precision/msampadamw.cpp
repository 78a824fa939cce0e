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

void MsAmpAdamW::setCompanionState(std::function<void(torch::serialize::OutputArchive &)> save,
                                   std::function<void(torch::serialize::InputArchive &)> load)
{
    m_saveCompanion = std::move(save);
    m_loadCompanion = std::move(load);
}

void MsAmpAdamW::save(torch::serialize::OutputArchive &archive) const
{
    archive.write("msamp/level", torch::tensor({int64_t(m_level == MsAmpLevel::O2 ? 2 : 1)}));
    int64_t index = 0;
    for (const auto &group : param_groups()) {
        for (const auto &p : group.params()) {
            const std::string key = "msamp/" + std::to_string(index++) + "/";
            auto it = m_moments.find(p.unsafeGetTensorImpl());
            if (it == m_moments.end() || !it->second.first.defined())
                continue;
            const Moments &m = it->second;
            archive.write(key + "step", torch::tensor({m.step}));
            // E4M3 codes as bytes (the archive's dtypes), FP16 and float32 as they are.
            archive.write(key + "first", m_level == MsAmpLevel::O2 ? m.first.view(torch::kByte) : m.first);
            archive.write(key + "second", m.second);
            archive.write(key + "scales", torch::tensor({m.firstScale, m.secondScale}));
        }
    }
    if (m_saveCompanion)
        m_saveCompanion(archive);
}

void MsAmpAdamW::load(torch::serialize::InputArchive &archive)
{
    torch::Tensor level;
    archive.read("msamp/level", level);
    const int64_t mine = m_level == MsAmpLevel::O2 ? 2 : 1;
    if (level.item<int64_t>() != mine)
        throw std::invalid_argument("fp8 MS-AMP: the checkpoint's optimizer state is O" +
                                    std::to_string(level.item<int64_t>()) + "; this run is O" + std::to_string(mine));
    std::unordered_map<const void *, Moments> moments;
    int64_t index = 0;
    for (const auto &group : param_groups()) {
        for (const auto &p : group.params()) {
            const std::string key = "msamp/" + std::to_string(index++) + "/";
            torch::Tensor step, first, second, scales;
            if (!archive.try_read(key + "step", step))
                continue; // no step taken for this parameter yet
            archive.read(key + "first", first);
            archive.read(key + "second", second);
            archive.read(key + "scales", scales);
            if (first.sizes() != p.sizes() || second.sizes() != p.sizes())
                throw std::invalid_argument("fp8 MS-AMP: the checkpoint's moments of parameter " +
                                            std::to_string(index - 1) + " do not have its shape");
            Moments m;
            m.step = step.item<int64_t>();
            m.first = m_level == MsAmpLevel::O2 ? first.view(float8Dtype(Fp8Format::E4M3)) : first;
            m.second = second;
            m.firstScale = scales[0].item<float>();
            m.secondScale = scales[1].item<float>();
            moments[p.unsafeGetTensorImpl()] = std::move(m);
        }
    }
    if (m_loadCompanion)
        m_loadCompanion(archive);
    m_moments = std::move(moments);
}

} // namespace accel::runtime
