// Context parallelism of the model families (parallelism_config cp_size): the ranks of the device
// mesh's cp group each hold a part of every sequence, balanced for causal attention as torch's
// context parallel balances it: the sequence is cut into 2 x size chunks and rank r holds chunks r
// and 2 x size - 1 - r, in that order. Positions (RoPE, the causal mask) are the tokens' places
// in the whole sequence. Attention is exact: each rank's queries meet every rank's keys and values,
// exchanged as Accelerate's cp_comm_strategy names it:
//   - allgather: the keys and values of the whole sequence gathered at once, one softmax;
//   - alltoall: size steps of a ring, each rank passing its current block to the next rank
//     (torch's all-to-all rotation) while its queries attend the block they hold, the partial
//     results merged with their running maximum and sum (the online softmax).
// Both are autograd functions: the gradients of the keys and values travel back the same way.
// Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/inference/layers.h"

#include <ATen/Tensor.h>

#include <functional>
#include <memory>

namespace accel::inference {

enum class KeyValueExchange { AllGather, AllToAll };

// This rank's context-parallel group (the device mesh's cp dimension), its collectives given by
// the runtime.
struct ContextParallelGroup {
    int rank = 0;
    int size = 1;
    KeyValueExchange exchange = KeyValueExchange::AllGather;
    // `output` holds size chunks of `input`'s size (along dim 0); chunk r is rank r's input.
    std::function<void(at::Tensor &, const at::Tensor &)> allGather;
    // `input` holds size chunks; `output` (one chunk) the sum over the ranks of chunk `rank`.
    std::function<void(at::Tensor &, const at::Tensor &)> reduceScatterSum;
};
using ContextParallel = std::shared_ptr<const ContextParallelGroup>;

// The whole-sequence positions [localTokens] (kLong) of this rank's tokens; localTokens is even.
at::Tensor contextParallelPositions(const ContextParallelGroup &group, int64_t localTokens);
// This rank's tokens of `whole` along `dim` (its size divisible by 2 x size), in its own storage.
at::Tensor contextParallelPart(const ContextParallelGroup &group, const at::Tensor &whole, int64_t dim);

// Causal attention of this rank's queries q [B, H, T, D] over the whole sequence's keys, given
// this rank's keys and values k, v [B, KVH, T, D] (grouped-query heads as causalAttention).
// options.dropout must be 0.
at::Tensor ringAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, const AttentionOptions &options,
                         const ContextParallelGroup &group);

} // namespace accel::inference
