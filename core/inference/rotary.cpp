#include "core/inference/rotary.h"

#include <algorithm>
#include <cmath>

namespace accel::inference {

namespace {

at::Tensor evenChannels(int64_t dim) // arange(0, dim, 2) / dim in float32
{
    return at::arange(0, dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) / static_cast<double>(dim);
}

at::Tensor defaultFrequencies(double base, int64_t dim)
{
    return 1.0 / at::pow(base, evenChannels(dim));
}

double yarnMscale(double scale, double mscale = 1.0)
{
    return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// _compute_yarn_parameters
std::pair<at::Tensor, double> yarn(const RopeConfig &r)
{
    const double base = r.theta, factor = r.factor;
    const int64_t dim = r.rotaryDim;
    double attention = 0;
    if (r.attentionFactor)
        attention = *r.attentionFactor;
    else if (r.mscale && *r.mscale != 0 && r.mscaleAllDim && *r.mscaleAllDim != 0)
        attention = yarnMscale(factor, *r.mscale) / yarnMscale(factor, *r.mscaleAllDim);
    else
        attention = yarnMscale(factor);
    auto correctionDim = [&](double rotations) {
        return (dim * std::log(r.originalMaxPositions / (rotations * 2 * M_PI))) / (2 * std::log(base));
    };
    double low = correctionDim(r.betaFast), high = correctionDim(r.betaSlow);
    if (r.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(dim - 1));
    if (low == high)
        high += 0.001; // transformers' guard against a zero-width ramp
    const at::Tensor positionFrequencies = at::pow(base, evenChannels(dim));
    const at::Tensor extrapolation = 1.0 / positionFrequencies;
    const at::Tensor interpolation = 1.0 / (factor * positionFrequencies);
    const at::Tensor ramp =
        at::clamp((at::arange(dim / 2, at::TensorOptions().dtype(at::kFloat)) - low) / (high - low), 0, 1);
    const at::Tensor extrapolationFactor = 1 - ramp;
    return {interpolation * (1 - extrapolationFactor) + extrapolation * extrapolationFactor, attention};
}

// _compute_llama3_parameters
at::Tensor llama3(const RopeConfig &r)
{
    const at::Tensor invFreq = defaultFrequencies(r.theta, r.rotaryDim);
    const double old = static_cast<double>(r.originalMaxPositions);
    const double lowWavelength = old / r.lowFreqFactor, highWavelength = old / r.highFreqFactor;
    const at::Tensor wavelength = 2 * M_PI / invFreq;
    at::Tensor scaled = at::where(wavelength > lowWavelength, invFreq / r.factor, invFreq);
    const at::Tensor smooth = (old / wavelength - r.lowFreqFactor) / (r.highFreqFactor - r.lowFreqFactor);
    const at::Tensor smoothed = (1 - smooth) * scaled / r.factor + smooth * scaled;
    const at::Tensor medium =
        at::logical_not(wavelength < highWavelength) * at::logical_not(wavelength > lowWavelength);
    return at::where(medium, smoothed, scaled);
}

at::Tensor longropeFrequencies(const RopeConfig &r, const std::vector<double> &factors)
{
    std::vector<float> values(factors.begin(), factors.end());
    const at::Tensor ext = at::tensor(values, at::TensorOptions().dtype(at::kFloat));
    return 1.0 / (ext * at::pow(r.theta, evenChannels(r.rotaryDim)));
}

} // namespace

RotaryEmbedding::RotaryEmbedding(const RopeConfig &rope) : m_rope(rope)
{
    const std::string &type = rope.type;
    if (type == "linear") {
        m_invFreq = defaultFrequencies(rope.theta, rope.rotaryDim) / rope.factor;
    } else if (type == "yarn") {
        std::tie(m_invFreq, m_attentionFactor) = yarn(rope);
    } else if (type == "llama3") {
        m_invFreq = llama3(rope);
    } else if (type == "longrope") {
        m_invFreq = longropeFrequencies(rope, rope.shortFactor);
        m_longInvFreq = longropeFrequencies(rope, rope.longFactor);
        if (rope.attentionFactor)
            m_attentionFactor = *rope.attentionFactor;
        else if (rope.factor > 1.0)
            m_attentionFactor =
                std::sqrt(1 + std::log(rope.factor) / std::log(static_cast<double>(rope.originalMaxPositions)));
    } else { // default, and dynamic up to max_position_embeddings
        m_invFreq = defaultFrequencies(rope.theta, rope.rotaryDim);
    }
}

// _compute_dynamic_ntk_parameters with a sequence length tensor, as dynamic_rope_update passes it:
// the new base is computed in float32.
at::Tensor RotaryEmbedding::dynamicFrequencies(int64_t seqLen) const
{
    const double factor = m_rope.factor;
    const int64_t dim = m_rope.rotaryDim;
    const at::Tensor length = at::maximum(at::scalar_tensor(seqLen, at::TensorOptions().dtype(at::kLong)),
                                          at::scalar_tensor(m_rope.maxPositions, at::TensorOptions().dtype(at::kLong)));
    const at::Tensor base = m_rope.theta * at::pow(length * factor / m_rope.maxPositions - (factor - 1),
                                                   static_cast<double>(dim) / static_cast<double>(dim - 2));
    return 1.0 / at::pow(base, evenChannels(dim));
}

at::Tensor RotaryEmbedding::frequencies(int64_t seqLen) const
{
    if (m_rope.type == "dynamic" && seqLen > m_rope.maxPositions)
        return dynamicFrequencies(seqLen);
    if (m_rope.type == "longrope" && seqLen > m_rope.originalMaxPositions)
        return m_longInvFreq;
    return m_invFreq;
}

std::pair<at::Tensor, at::Tensor> RotaryEmbedding::cosSin(int64_t past, int64_t tokens) const
{
    const auto positions = at::arange(past, past + tokens, at::TensorOptions().dtype(at::kFloat));
    const auto freqs = at::outer(positions, frequencies(past + tokens));
    const auto emb = at::cat({freqs, freqs}, -1);
    if (m_attentionFactor == 1.0)
        return {emb.cos(), emb.sin()};
    return {emb.cos() * m_attentionFactor, emb.sin() * m_attentionFactor};
}

at::Tensor applyRotary(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin)
{
    const int64_t rotary = cos.size(-1);
    const at::Tensor turned = rotary == x.size(-1) ? x : x.narrow(-1, 0, rotary);
    const int64_t half = rotary / 2;
    auto rotated = at::cat({-turned.narrow(-1, half, half), turned.narrow(-1, 0, half)}, -1);
    auto out = turned * cos + rotated * sin;
    if (rotary == x.size(-1))
        return out;
    return at::cat({out, x.narrow(-1, rotary, x.size(-1) - rotary)}, -1);
}

} // namespace accel::inference
