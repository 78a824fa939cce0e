#include "core/worker/activationcheckpoint.h"

#include <ATen/core/ivalue.h>

#include <atomic>

namespace accel::worker {

namespace {

using Body = std::function<torch::Tensor(const torch::Tensor &)>;

std::atomic<int64_t> g_recomputed{0};

struct BodyHolder : torch::CustomClassHolder {
    explicit BodyHolder(Body b) : body(std::move(b)) {}
    Body body;
};

// The default generator of the input's device (CPU, or the GPU the block runs on).
at::Generator generatorOf(const torch::Tensor &tensor)
{
    return at::globalContext().defaultGenerator(tensor.device());
}

struct CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
    static torch::Tensor forward(torch::autograd::AutogradContext *ctx, const torch::Tensor &input,
                                 c10::intrusive_ptr<BodyHolder> holder)
    {
        ctx->saved_data["body"] = c10::IValue::make_capsule(holder);
        ctx->saved_data["rng"] = generatorOf(input).get_state();
        ctx->save_for_backward({input});
        torch::NoGradGuard noGrad;
        return holder->body(input);
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                   torch::autograd::variable_list grads)
    {
        auto holder = c10::static_intrusive_pointer_cast<BodyHolder>(ctx->saved_data["body"].toCapsule());
        const torch::Tensor saved = ctx->get_saved_variables()[0];
        auto input = saved.detach().requires_grad_(saved.requires_grad());
        at::Generator generator = generatorOf(input);
        const at::Tensor now = generator.get_state();
        generator.set_state(ctx->saved_data["rng"].toTensor());
        torch::Tensor output;
        {
            torch::AutoGradMode enable(true);
            output = holder->body(input);
        }
        ++g_recomputed;
        generator.set_state(now);
        if (output.requires_grad())
            torch::autograd::backward({output}, {grads[0]});
        return {input.requires_grad() ? input.grad() : torch::Tensor(), torch::Tensor()};
    }
};

} // namespace

int64_t recomputedForwards()
{
    return g_recomputed.load();
}

torch::Tensor checkpointed(const std::function<torch::Tensor(const torch::Tensor &)> &body, const torch::Tensor &input)
{
    if (!torch::GradMode::is_enabled())
        return body(input);
    // Without an input that needs a gradient the checkpoint's output would need none either, and
    // the block's parameters would get no gradient.
    const torch::Tensor in = input.requires_grad() ? input : input.detach().requires_grad_(true);
    return CheckpointFunction::apply(in, c10::make_intrusive<BodyHolder>(body));
}

} // namespace accel::worker
