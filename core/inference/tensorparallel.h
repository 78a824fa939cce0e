// Tensor parallelism of the model families (Megatron-LM's split, as transformers' tensor-parallel
// plans apply it to Llama, Mistral and Qwen2: q/k/v, gate and up column-wise; o and down row-wise).
// A column-wise Linear keeps this rank's rows of the weight (its output features, and their bias);
// a row-wise one keeps this rank's columns (input features), sums its output over the group and
// then adds the whole bias. Between the two each rank computes its own heads and its own part of
// the feed-forward width. Around each region: enterTensorParallel (identity forward, the input
// gradient summed over the group in backward) and leaveTensorParallel (the sum over the group in
// forward, identity in backward). Everything outside the regions (embeddings, norms, the head) is
// whole and identical on every rank, and so are its gradients.
// Two options (TensorParallelOptions, training only):
//   - vocabulary parallel: the embedding keeps vocab / size rows (ids outside them give zeros, the
//     output summed over the group) and the LM head vocab / size output features; the loss
//     (vocabParallelCrossEntropy) works on each rank's logit columns, so no rank holds the whole
//     [tokens, vocab] logits. Tied embeddings share the split weight.
//   - sequence parallel (Megatron-LM's): between the regions each rank keeps 1 / size of the
//     tokens (dim 1 of [batch, tokens, hidden]): norms and dropout run on that part, the norms'
//     weight gradients summed over the group. With the group's sequenceParallel set, entering a
//     region all-gathers the tokens (backward: reduce-scatter) and leaving it reduce-scatters them
//     (backward: all-gather) instead of the all-reduce.
// The Linear methods and the autograd functions are defined in layers.cpp. Includes libtorch:
// only torch .cpp files include it.
#pragma once

#include <ATen/Tensor.h>

#include <functional>
#include <memory>

namespace accel::inference {

// This rank's tensor-parallel group (the device mesh's tp dimension), its collectives given by
// the runtime so that the model code needs no process group.
struct TensorParallelGroup {
    int rank = 0;
    int size = 1;
    // In place: the element-wise sum over the group, the same bits on every rank.
    std::function<void(at::Tensor &)> allReduceSum;
    // `output` holds size chunks of `input`'s size (along dim 0); chunk r is rank r's input.
    std::function<void(at::Tensor &, const at::Tensor &)> allGather;
    // Optional: `output` (dim 0 of `input` / size) receives this rank's chunk of the element-wise
    // sum. Unset: allReduceSum, then the chunk.
    std::function<void(at::Tensor &, const at::Tensor &)> reduceScatter;
    // The activations outside the regions hold this rank's part of the tokens (sequence parallel).
    bool sequenceParallel = false;
};
using TensorParallel = std::shared_ptr<const TensorParallelGroup>;

enum class TensorParallelStyle { Column, Row };

struct TensorParallelOptions {
    bool vocabParallel = false;
    bool sequenceParallel = false;
};

// The input of a tensor-parallel region: x forward, the gradient summed over the group backward
// (sequence parallel: the tokens all-gathered forward, the gradient reduce-scattered backward).
at::Tensor enterTensorParallel(const at::Tensor &x, const TensorParallelGroup &group);
// The output of a row-wise layer: the sum over the group forward, the gradient as is backward
// (sequence parallel: reduce-scattered over the tokens forward, all-gathered backward).
at::Tensor leaveTensorParallel(const at::Tensor &x, const TensorParallelGroup &group);

// Sequence parallel, dim 1 of x: this rank's part of the tokens of a whole (identical) x, the
// gradient all-gathered backward; and the whole x from the parts for an identical consumer, this
// rank's part of the gradient backward.
at::Tensor scatterSequence(const at::Tensor &x, const TensorParallelGroup &group);
at::Tensor gatherSequence(const at::Tensor &x, const TensorParallelGroup &group);
// x as is; its gradient summed over the group (a replicated weight used on this rank's tokens only).
at::Tensor sumGradientOverGroup(const at::Tensor &x, const TensorParallelGroup &group);
// Dropout on this rank's part of the tokens of x ([batch, tokens / size, ...]): the mask is drawn
// for the whole sequence from the default generator (the same on every rank of the group) and
// this rank's part kept, so that no two tokens share a mask.
at::Tensor sequenceParallelDropout(const at::Tensor &x, double p, const TensorParallelGroup &group);

// The cross entropy of each row of logits [N, vocab / size] (this rank's columns: vocabulary ids
// rank * vocab / size onwards) against targets [N] (whole ids; ignoreIndex rows give 0), in float32:
// the maximum and the sum of exponentials combined over the group, the target's logit from the
// rank that holds it. Returns [N]; backward gives each rank softmax - one-hot on its columns.
at::Tensor vocabParallelCrossEntropy(const at::Tensor &logits, const at::Tensor &targets, int64_t ignoreIndex,
                                     const TensorParallelGroup &group);

} // namespace accel::inference
