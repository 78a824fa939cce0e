#include "core/runtime/precision/fp8scaling.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace accel::runtime {

float delayedScalingFactor(float amax, float previousScale, float fp8Max, int margin)
{
    if (!(amax > 0.0f) || !std::isfinite(amax))
        return previousScale;
    float scale = fp8Max / amax / std::ldexp(1.0f, margin);
    if (std::isinf(scale))
        scale = FLT_MAX;
    return scale;
}

DelayedScalingState::DelayedScalingState(int historyLen, AmaxComputeAlgo algo, int margin, float fp8Max)
    : m_history(size_t(std::max(1, historyLen)), 0.0f), m_algo(algo), m_margin(margin), m_fp8Max(fp8Max)
{}

void DelayedScalingState::record(float amax)
{
    float &current = m_history.front();
    // max() that keeps a NaN (a NaN amax must reach the update, which then keeps the old scale).
    if (std::isnan(amax) || amax > current)
        current = amax;
}

void DelayedScalingState::update()
{
    const float current = m_history.front();
    if (current == 0.0f)
        return;
    float amax = current;
    if (m_algo == AmaxComputeAlgo::Max) {
        for (float value : m_history)
            amax = (std::isnan(value) || value > amax) ? value : amax;
    }
    std::rotate(m_history.begin(), m_history.begin() + 1, m_history.end());
    m_history.front() = 0.0f;
    m_scale = delayedScalingFactor(amax, m_scale, m_fp8Max, m_margin);
}

bool DelayedScalingState::restore(const std::vector<float> &history, float scale)
{
    if (history.size() != m_history.size())
        return false;
    m_history = history;
    m_scale = scale;
    return true;
}

float powerOfTwoScalingFactor(float amax, float previousScale, float fpMax, int margin)
{
    const float exponent = std::floor(std::log2(fpMax / amax)) - float(margin);
    float scale = std::nearbyint(std::pow(2.0f, std::fabs(exponent)));
    if (!(amax > 0.0f) || !std::isfinite(amax))
        scale = previousScale;
    if (exponent < 0)
        scale = 1.0f / scale;
    return scale;
}

PowerOfTwoScalingState::PowerOfTwoScalingState(int window, float fpMax)
    : m_amax(size_t(std::max(1, window)), 0.0f), m_window(std::max(1, window)), m_fpMax(fpMax)
{}

float PowerOfTwoScalingState::scaleFor(float amax)
{
    if (inTime()) {
        m_amax.front() = amax;
        m_scale = powerOfTwoScalingFactor(amax, m_scale, m_fpMax);
    } else if (std::isnan(amax) || amax > m_amax.front()) {
        m_amax.front() = amax;
    }
    return m_scale;
}

void PowerOfTwoScalingState::update()
{
    if (m_window == 1)
        return;
    float amax = m_amax.front();
    for (float value : m_amax)
        amax = (std::isnan(value) || value > amax) ? value : amax;
    const float scale = powerOfTwoScalingFactor(amax, m_scale, m_fpMax);
    const bool valid = std::isfinite(m_amax.front());
    std::rotate(m_amax.rbegin(), m_amax.rbegin() + 1, m_amax.rend());
    m_amax.front() = 0.0f;
    m_counter = valid ? m_counter + 1 : 0;
    if (valid)
        m_scale = scale;
}

float dynamicScalingFactor(float amax, float fp8Max)
{
    return float(double(fp8Max) / std::max(double(amax), 1e-12));
}

bool PowerOfTwoScalingState::restore(const std::vector<float> &window, int counter, float scale)
{
    if (window.size() != m_amax.size())
        return false;
    m_amax = window;
    m_counter = counter;
    m_scale = scale;
    return true;
}

} // namespace accel::runtime
