// A callback after a parameter's gradient accumulator has written .grad: how DDP's buckets and
// the ShardingEngine's units learn, during backward, that their gradients are complete.
// Includes libtorch.
#pragma once

#include <torch/csrc/autograd/function_hook.h>
#include <torch/torch.h>

#include <functional>
#include <memory>

namespace accel::runtime {

class GradientReadyHook : public torch::autograd::FunctionPostHook {
public:
    explicit GradientReadyHook(std::function<void()> callback) : m_callback(std::move(callback)) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list &outputs,
                                              const torch::autograd::variable_list & /*inputs*/) override
    {
        m_callback();
        return outputs;
    }

private:
    std::function<void()> m_callback;
};

} // namespace accel::runtime
