// Rotary position embedding on libtorch as transformers 5 computes it: the inverse frequencies of
// the rope type (default, linear, dynamic NTK, YaRN, LongRoPE, Llama 3) and cos/sin of the positions
// times the type's attention factor, applied with rotate_half to the first rotaryDim channels of
// each head. Dynamic NTK and LongRoPE depend on the sequence length: the frequencies of a forward
// are those of its last position + 1, as transformers' dynamic_rope_update chooses them (keys
// already cached keep the rotation they were computed with). Includes libtorch: only torch .cpp
// files include it.
#pragma once

#include "core/inference/modelconfig.h"

#include <ATen/ATen.h>

#include <utility>

namespace accel::inference {

class RotaryEmbedding {
public:
    explicit RotaryEmbedding(const RopeConfig &rope);
    // cos and sin [tokens, rotaryDim] in float32 for positions past .. past + tokens - 1.
    std::pair<at::Tensor, at::Tensor> cosSin(int64_t past, int64_t tokens) const;
    // The inverse frequencies [rotaryDim / 2] used for a forward whose last position is seqLen - 1.
    at::Tensor frequencies(int64_t seqLen) const;
    double attentionFactor() const { return m_attentionFactor; }

private:
    at::Tensor dynamicFrequencies(int64_t seqLen) const;
    RopeConfig m_rope;
    at::Tensor m_invFreq;     // at init (transformers' original_inv_freq)
    at::Tensor m_longInvFreq; // longrope beyond the original length
    double m_attentionFactor = 1.0;
};

// x [B, H, T, D] rotated on its first cos.size(-1) channels: x * cos + rotate_half(x) * sin, the
// rest passed through; cos/sin [T, rotaryDim] broadcast over batch and heads.
at::Tensor applyRotary(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin);

} // namespace accel::inference
