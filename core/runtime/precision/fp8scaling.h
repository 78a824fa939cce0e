// The scaling rules of the three FP8 recipes, as plain numbers (no tensors), so that each rule is
// tested against hand-worked sequences. fp8recipes.cpp applies them to tensors. docs/fp8.md gives
// the rules in words.
#pragma once

#include "core/plan/fp8config.h"

#include <vector>

namespace accel::runtime {

// TE-style delayed scaling of one tensor role of one layer (input, weight or grad_output). The
// scale a step quantises with was computed from the amaxes of earlier steps.
class DelayedScalingState {
public:
    DelayedScalingState(int historyLen, AmaxComputeAlgo algo, int margin, float fp8Max);

    float scale() const { return m_scale; }
    // Quantising a tensor records its amax (of the unscaled values) in the current row.
    void record(float amax);
    float currentAmax() const { return m_history.front(); }
    void setCurrentAmax(float amax) { m_history.front() = amax; } // after the all-reduce (MAX)
    // The update after a step: amax from the window (max) or the current row (most_recent), the
    // history rolled so the current row becomes the oldest kept and row 0 starts at 0, then
    // scale = fp8Max / amax / 2^margin, keeping the previous scale for a zero or non-finite amax
    // and using FLT_MAX where the quotient overflows. A step whose current amax is 0 (the tensor
    // was not quantised) leaves the history as it is.
    void update();
    const std::vector<float> &history() const { return m_history; }
    // Back to a saved state (a checkpoint). False, changing nothing, when the history length differs.
    bool restore(const std::vector<float> &history, float scale);

private:
    std::vector<float> m_history; // row 0 = current step
    AmaxComputeAlgo m_algo;
    int m_margin;
    float m_fp8Max;
    float m_scale = 1.0f;
};

// TE's scale formula on its own.
float delayedScalingFactor(float amax, float previousScale, float fp8Max, int margin);

// MS-AMP's power-of-two scale: 2^(floor(log2(fpMax / amax)) - margin), the previous scale for a
// non-positive or non-finite amax (with MS-AMP's own rule that an infinite amax gives 1 / previous).
float powerOfTwoScalingFactor(float amax, float previousScale, float fpMax, int margin = 0);

// MS-AMP's ScalingMeta: window 1 (or warm-up, fewer steps than the window) scales each tensor by
// its own amax; after that the scale comes from the window's maximum, updated after each
// optimizer step.
class PowerOfTwoScalingState {
public:
    PowerOfTwoScalingState(int window, float fpMax);

    // The scale to quantise a tensor with amax `amax` now (records the amax).
    float scaleFor(float amax);
    bool inTime() const { return m_window == 1 || m_counter < m_window; }
    // After the optimizer step (windows > 1 only do anything).
    void update();
    float scale() const { return m_scale; }
    const std::vector<float> &window() const { return m_amax; }
    int counter() const { return m_counter; }
    // Back to a saved state (a checkpoint). False, changing nothing, when the window length differs.
    bool restore(const std::vector<float> &window, int counter, float scale);

private:
    std::vector<float> m_amax;
    int m_window;
    int m_counter = 0;
    float m_fpMax;
    float m_scale = 1.0f;
};

// torchao's dynamic tensorwise scale: float32(fp8Max / max(amax, 1e-12)) computed in float64.
float dynamicScalingFactor(float amax, float fp8Max);

} // namespace accel::runtime
