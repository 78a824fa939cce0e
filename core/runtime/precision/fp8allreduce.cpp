#include "core/runtime/precision/fp8allreduce.h"

#include "core/runtime/precision/fp8scaling.h"
#include "core/runtime/precision/fp8tensor.h"

#include <cmath>

namespace accel::runtime {

Fp8GradientAllReduce::Fp8GradientAllReduce(std::vector<torch::Tensor> weights, int worldSize, ReduceMax reduceMax,
                                           AllGatherBytes allGather)
    : m_weights(std::move(weights)), m_worldSize(worldSize), m_reduceMax(std::move(reduceMax)),
      m_allGather(std::move(allGather)), m_scales(m_weights.size(), 1.0f)
{}

float Fp8GradientAllReduce::preScale(int worldSize)
{
    return float(1.0 / std::sqrt(double(worldSize)));
}

torch::Tensor Fp8GradientAllReduce::sumInE4m3(const std::vector<torch::Tensor> &codes)
{
    const double max = fp8MaxFinite(Fp8Format::E4M3);
    const auto e4m3 = float8Dtype(Fp8Format::E4M3);
    torch::Tensor sum = codes.at(0).view(e4m3).to(torch::kFloat);
    for (size_t r = 1; r < codes.size(); ++r)
        sum = (sum + codes[r].view(e4m3).to(torch::kFloat)).clamp(-max, max).to(e4m3).to(torch::kFloat);
    return sum;
}

void Fp8GradientAllReduce::saveState(torch::serialize::OutputArchive &archive) const
{
    archive.write("fp8_msamp/allreduce/scales", torch::tensor(m_scales, torch::kFloat));
    archive.write("fp8_msamp/allreduce/world_size", torch::tensor({int64_t(m_worldSize)}));
}

std::string Fp8GradientAllReduce::loadState(torch::serialize::InputArchive &archive)
{
    torch::Tensor scales, world;
    const std::string fresh =
        "the FP8 gradient all-reduce's previous scales of " + std::to_string(m_weights.size()) + " weights start at 1";
    if (!archive.try_read("fp8_msamp/allreduce/scales", scales) ||
        !archive.try_read("fp8_msamp/allreduce/world_size", world))
        return "the checkpoint holds no FP8 all-reduce scales (saved by one process or before they were kept): " +
               fresh;
    if (scales.numel() != int64_t(m_weights.size()))
        throw std::invalid_argument("fp8 MS-AMP: the checkpoint holds FP8 all-reduce scales of " +
                                    std::to_string(scales.numel()) + " weights; this model converts " +
                                    std::to_string(m_weights.size()));
    if (world.item<int64_t>() != m_worldSize)
        return "the checkpoint's FP8 all-reduce scales were made for " + std::to_string(world.item<int64_t>()) +
               " ranks (their pre-scale 1/sqrt(W) included); this run has " + std::to_string(m_worldSize) + ": " +
               fresh;
    scales = scales.to(torch::kFloat).contiguous();
    m_scales.assign(scales.data_ptr<float>(), scales.data_ptr<float>() + scales.numel());
    return {};
}

void Fp8GradientAllReduce::reduce()
{
    torch::NoGradGuard noGrad;
    const size_t n = m_weights.size();
    m_local = {};
    if (n == 0)
        return;
    for (const auto &weight : m_weights) {
        torch::Tensor gradient = weight.grad().defined() ? weight.grad().detach().to(torch::kFloat).clone()
                                                         : torch::zeros(weight.sizes(), torch::kFloat);
        float amax = absMax(gradient);
        m_local.amax.push_back(amax);
        m_local.gradients.push_back(std::move(gradient));
    }
    std::vector<float> amax = m_local.amax;
    for (float &a : amax) {
        if (std::isnan(a))
            a = INFINITY; // a MAX reduction ignores NaN
    }
    if (m_reduceMax)
        m_reduceMax(amax);
    const float pre = preScale(m_worldSize);
    std::vector<int64_t> offsets{0};
    for (size_t i = 0; i < n; ++i) {
        m_scales[i] = powerOfTwoScalingFactor(amax[i], m_scales[i], fp8MaxFinite(Fp8Format::E4M3)) * pre;
        m_local.scales.push_back(m_scales[i]);
        m_local.codes.push_back(
            quantize(m_local.gradients[i], Fp8Format::E4M3, m_scales[i]).data.view(torch::kByte).flatten());
        offsets.push_back(offsets.back() + m_local.codes.back().numel());
    }
    // One gather of every tensor's codes.
    const std::vector<torch::Tensor> ranks = m_allGather(torch::cat(m_local.codes));
    for (size_t i = 0; i < n; ++i) {
        std::vector<torch::Tensor> codes;
        for (const auto &rank : ranks)
            codes.push_back(rank.slice(0, offsets[i], offsets[i + 1]));
        const torch::Tensor reduced = sumInE4m3(codes).div(m_scales[i]).div(float(m_worldSize));
        torch::Tensor &grad = m_weights[i].mutable_grad();
        if (grad.defined())
            grad.copy_(reduced.view(m_weights[i].sizes()));
        else
            grad = reduced.view(m_weights[i].sizes()).to(m_weights[i].scalar_type());
    }
}

} // namespace accel::runtime
