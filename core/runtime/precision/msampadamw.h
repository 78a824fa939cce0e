// MS-AMP's low-bit AdamW for O1 / O2: the usual AdamW update computed in float32, with the
// moments stored as MS-AMP stores them: O1 float32 + float32, O2 the first moment in FP8 E4M3 and
// the second in FP16, each with a power-of-two scale (1 + 2 bytes per parameter). Weights of the
// converted Linear layers go back to scaled FP16 after each step (Fp8Recipe::afterOptimizerStep).
#pragma once

#include "core/plan/fp8config.h"

#include <torch/torch.h>

#include <functional>
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

    // The moments as stored (O2: E4M3 codes + scale, FP16 + scale; O1: float32), each parameter's
    // step count, then whatever the companion writes (the recipe's scaling state), so that a
    // resumed run continues bit for bit. load throws std::invalid_argument for another level or
    // shapes that do not match.
    void save(torch::serialize::OutputArchive &archive) const override;
    void load(torch::serialize::InputArchive &archive) override;
    void setCompanionState(std::function<void(torch::serialize::OutputArchive &)> save,
                           std::function<void(torch::serialize::InputArchive &)> load);

private:
    struct Moments {
        int64_t step = 0;
        torch::Tensor first, second; // E4M3 / FP16 (O2) or float32 (O1)
        float firstScale = 1.0f, secondScale = 1.0f;
    };
    MsAmpLevel m_level;
    bool m_decoupled = true; // AdamW; false for Adam (L2 added to the gradient)
    std::unordered_map<const void *, Moments> m_moments;
    std::function<void(torch::serialize::OutputArchive &)> m_saveCompanion;
    std::function<void(torch::serialize::InputArchive &)> m_loadCompanion;
};

} // namespace accel::runtime
