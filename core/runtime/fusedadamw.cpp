#include "core/runtime/fusedadamw.h"

#include <ATen/ops/_fused_adamw.h>
#include <torch/torch.h>

namespace accel::runtime {

namespace {

// What at::_fused_adamw_ takes: dense floating-point tensors on the CPU or a CUDA device, all of a
// group on one device.
bool fusable(const std::vector<torch::Tensor> &params)
{
    if (params.empty())
        return false;
    const torch::Device device = params.front().device();
    for (const auto &p : params) {
        const auto type = p.scalar_type();
        if (p.device() != device || !(p.device().is_cpu() || p.device().is_cuda()) || p.is_sparse() ||
            p.grad().is_sparse() || !(type == torch::kFloat || type == torch::kBFloat16 || type == torch::kHalf) ||
            p.grad().scalar_type() != type)
            return false;
    }
    return true;
}

} // namespace

torch::Tensor FusedAdamW::step(LossClosure closure)
{
    torch::Tensor loss;
    if (closure) {
        torch::AutoGradMode enableGrad(true);
        loss = closure();
    }
    torch::NoGradGuard noGrad;
    // Each group's parameters with a gradient, and whether the kernel takes the group: decided once.
    struct Group {
        std::vector<torch::Tensor> params;
        bool fused = false;
    };
    std::vector<Group> groups;
    bool fallback = false;
    for (auto &group : param_groups()) {
        Group g;
        for (const auto &p : group.params()) {
            if (p.grad().defined())
                g.params.push_back(p);
        }
        g.fused = !static_cast<torch::optim::AdamWOptions &>(group.options()).amsgrad() && fusable(g.params);
        fallback = fallback || (!g.fused && !g.params.empty());
        groups.push_back(std::move(g));
    }
    for (size_t k = 0; k < groups.size(); ++k) {
        if (!groups[k].fused)
            continue;
        const auto &options = static_cast<torch::optim::AdamWOptions &>(param_groups()[k].options());
        const std::vector<torch::Tensor> &params = groups[k].params;
        std::vector<torch::Tensor> grads, averages, squares, steps;
        for (const auto &p : params) {
            auto &slot = state()[p.unsafeGetTensorImpl()];
            if (!slot) {
                // As torch::optim::AdamW starts a parameter's state.
                auto fresh = std::make_unique<torch::optim::AdamWParamState>();
                fresh->step(0);
                fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                slot = std::move(fresh);
            }
            auto &s = static_cast<torch::optim::AdamWParamState &>(*slot);
            s.step(s.step() + 1);
            grads.push_back(p.grad());
            averages.push_back(s.exp_avg());
            squares.push_back(s.exp_avg_sq());
            // The kernel reads each parameter's step from a float tensor on its device.
            steps.push_back(
                torch::full({}, double(s.step()), torch::TensorOptions().dtype(torch::kFloat).device(p.device())));
        }
        const auto [beta1, beta2] = options.betas();
        at::_fused_adamw_(params, grads, averages, squares, /*max_exp_avg_sqs=*/{}, steps, options.lr(), beta1, beta2,
                          options.weight_decay(), options.eps(), /*amsgrad=*/false, /*maximize=*/false);
    }
    if (fallback) {
        // The groups the kernel cannot take, stepped by torch::optim::AdamW alone: the fused groups'
        // gradients are hidden from it for the call.
        std::vector<std::pair<torch::Tensor, torch::Tensor>> hidden;
        for (Group &g : groups) {
            if (!g.fused)
                continue;
            for (auto &p : g.params) {
                hidden.emplace_back(p, p.grad());
                p.mutable_grad() = torch::Tensor();
            }
        }
        torch::optim::AdamW::step();
        for (auto &[p, grad] : hidden)
            p.mutable_grad() = grad;
    }
    return loss;
}

} // namespace accel::runtime
