// Dynamic loss scaling for fp16 mixed precision, as PyTorch's torch.amp.GradScaler does it with its
// defaults (what Accelerate creates for mixed_precision fp16): the loss is multiplied by the scale
// before backward; before the optimizer step the gradients are unscaled and checked; a step whose
// gradients hold inf/NaN is skipped and the scale multiplied by 0.5; after 2000 clean steps in a row
// the scale doubles. The arithmetic is libtorch's own (_amp_foreach_non_finite_check_and_unscale_,
// _amp_update_scale_), on the gradients' device.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace accel::runtime {

struct GradScalerOptions {
    double initScale = 65536.0;
    double growthFactor = 2.0;
    double backoffFactor = 0.5;
    int64_t growthInterval = 2000;
};

class GradScaler {
public:
    explicit GradScaler(torch::Device device, GradScalerOptions options = {});

    torch::Tensor scale(const torch::Tensor &loss) const;
    // Divides the gradients by the scale (once per optimizer step; later calls do nothing) and
    // records whether any of them is not finite.
    void unscale(const std::vector<torch::Tensor> &parameters);
    // Unscales if not done yet, runs `optimizerStep` unless a gradient was not finite, then
    // updates the scale. Returns whether the step ran.
    bool step(const std::vector<torch::Tensor> &parameters, const std::function<void()> &optimizerStep);

    double scaleValue() const { return m_scale.item<double>(); }
    int64_t growthTracker() const { return m_growthTracker.item<int64_t>(); }
    // Checkpoints: {"scale", "growth_tracker"} as torch.amp.GradScaler.state_dict() names them.
    void load(double scale, int64_t growthTracker);

private:
    GradScalerOptions m_options;
    torch::Tensor m_scale;         // float32 [1]
    torch::Tensor m_growthTracker; // int32 [1]
    torch::Tensor m_foundInf;      // float32 [1]
    bool m_unscaled = false;
};

} // namespace accel::runtime
