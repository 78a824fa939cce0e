// MS-AMP's low-bit AdamW for O1 / O2: the usual AdamW update computed in float32, with the
// moments stored as MS-AMP stores them: O1 float32 + float32, O2 the first moment in FP8 E4M3 and
// the second in FP16, each with a power-of-two scale (1 + 2 bytes per parameter). Weights of the
// converted Linear layers go back to scaled FP16 after each step (Fp8Recipe::afterOptimizerStep).
#pragma once

#include "core/runtime/precision/fp8config.h"

#include <torch/torch.h>

#include <unordered_map>

namespace accel::runtime {

class MsAmpAdamW : public torch::optim::Optimizer {
public:
    // The parameter groups and options of an existing torch::optim::AdamW or Adam (Adam: no
    // weight decay applied the AdamW way). Throws std::invalid_argument for another optimizer or
    // amsgrad, as msamp.initialize refuses them.
    MsAmpAdamW(torch::optim::Optimizer &original, MsAmpLevel level);

    torch::Tensor step(LossClosure closure = nullptr) override;
    // Bytes the two moments take (what O1 / O2 are about).
    int64_t momentBytes() const;

private:
    struct Moments {
        int64_t step = 0;
        torch::Tensor first, second; // E4M3 / FP16 (O2) or float32 (O1)
        float firstScale = 1.0f, secondScale = 1.0f;
    };
    MsAmpLevel m_level;
    bool m_decoupled = true; // AdamW; false for Adam (L2 added to the gradient)
    std::unordered_map<const void *, Moments> m_moments;
};

} // namespace accel::runtime
