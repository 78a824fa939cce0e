// AdamW as one pass over each parameter: libtorch's fused AdamW kernel (at::_fused_adamw_, the
// kernel behind torch.optim.AdamW(fused=True), on CPU and CUDA) in place of torch::optim::AdamW's
// sequence of element-wise operations, which reads and writes each parameter-sized tensor about ten
// times and allocates two parameter-sized temporaries per parameter and step. The update is
// AdamW's (decoupled weight decay, bias-corrected moments); only the order of the floating-point
// operations inside an element differs. Options, parameter groups and state (AdamWParamState:
// step, exp_avg, exp_avg_sq) are torch::optim::AdamW's, so checkpoints, the sharding engine's
// optimizer state and MS-AMP's wrapper read it unchanged. A group with amsgrad, a sparse gradient
// or a parameter the kernel does not take (dtype, device) is stepped by torch::optim::AdamW.
// Includes libtorch: only torch .cpp files include it.
#pragma once

#include <torch/optim/adamw.h>

namespace accel::runtime {

class FusedAdamW : public torch::optim::AdamW {
public:
    using torch::optim::AdamW::AdamW;
    torch::Tensor step(LossClosure closure = nullptr) override;
};

} // namespace accel::runtime
