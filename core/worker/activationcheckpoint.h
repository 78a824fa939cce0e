// Gradient checkpointing of one block (torch.utils.checkpoint's reentrant form, which is what
// Transformers' gradient_checkpointing_enable() runs per decoder layer): the forward runs without
// keeping activations; backward runs it again with the same random state (dropout draws the same
// masks) and back-propagates through the recomputed graph. Parameters the block reads get their
// gradients then, through their usual accumulators (the strategies' gradient hooks fire as
// without checkpointing). An input that needs no gradient (LoRA on frozen embeddings) is made a
// leaf that does, so the parameters inside still get theirs (Transformers'
// enable_input_require_grads). Includes libtorch.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>

namespace accel::worker {

// body(input) with activation checkpointing while autograd records; body(input) otherwise.
// `body` is called again during backward: it must own what it captures.
torch::Tensor checkpointed(const std::function<torch::Tensor(const torch::Tensor &)> &body, const torch::Tensor &input);

// How many forwards backward has recomputed in this process.
int64_t recomputedForwards();

} // namespace accel::worker
