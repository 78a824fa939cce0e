// Gradients a precision recipe reduces across ranks itself, in its own format, instead of the
// strategy's float reduction (MS-AMP's FP8 all-reduce, fp8allreduce.h). A data-parallel strategy
// asks the precision policy for one over its group, leaves `weights()` out of its own reduction and
// calls reduce() after each synchronising backward.
// Includes libtorch.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace accel::runtime {

class PrecisionGradientReduction {
public:
    virtual ~PrecisionGradientReduction() = default;
    // The parameters whose gradients this reduction owns.
    virtual const std::vector<torch::Tensor> &weights() const = 0;
    // Replaces each weight's gradient by the reduced one (every rank the same bits).
    virtual void reduce() = 0;
};

} // namespace accel::runtime
