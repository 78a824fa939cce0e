// Tensor parallelism of the model families (Megatron-LM's split, as transformers' tensor-parallel
// plans apply it to Llama, Mistral and Qwen2: q/k/v, gate and up column-wise, o and down row-wise).
// A column-wise Linear keeps this rank's rows of the weight (its output features, and their bias);
// a row-wise one keeps this rank's columns (input features), sums its output over the group and
// then adds the whole bias. Between the two each rank computes its own heads and its own part of
// the feed-forward width. Around each region: enterTensorParallel (identity forward, the input
// gradient summed over the group in backward) and leaveTensorParallel (the sum over the group in
// forward, identity in backward). Everything outside the regions (embeddings, norms, the head) is
// whole and identical on every rank, and so are its gradients. The Linear methods and the autograd
// functions are defined in layers.cpp. Includes libtorch: only torch .cpp files include it.
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
};
using TensorParallel = std::shared_ptr<const TensorParallelGroup>;

enum class TensorParallelStyle { Column, Row };

// The input of a tensor-parallel region: x forward, the gradient summed over the group backward.
at::Tensor enterTensorParallel(const at::Tensor &x, const TensorParallelGroup &group);
// The output of a row-wise layer: the sum over the group forward, the gradient as is backward.
at::Tensor leaveTensorParallel(const at::Tensor &x, const TensorParallelGroup &group);

} // namespace accel::inference
