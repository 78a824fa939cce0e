// torchao's float8 all-gather of FSDP2 shards (docs/fp8.md "Sharded training"): the sharding engine
// keeps a unit's converted Linear weights in a flat parameter of their own, and instead of
// all-gathering that flat in float32 it all-gathers one byte per element:
//   1. per weight, the amax of this rank's part of it (max |x| over the elements of the weight
//      that lie in this rank's chunk), the MAX over the ranks = the amax of the whole weight;
//   2. per weight, the scale of that amax (the recipe's weight scaling; AO:
//      float32(448 / max(amax, 1e-12)) computed in float64);
//   3. every rank casts its chunk to E4M3, each weight's elements with its weight's scale
//      (saturating; padding 0), and the codes are all-gathered;
//   4. each converted Linear takes its weight's codes and scale as the weight operand of its
//      forward and grad_input GEMMs (Fp8GatheredWeights::setGathered).
// The cast is element by element and the maximum of the parts' amaxes is the whole weight's, so
// the codes are exactly those of quantising the whole gathered float32 weight.
#pragma once

#include "core/runtime/precision/fp8tensor.h"

#include <vector>

namespace accel::runtime {

// Where a flat parameter's converted weights lie: weight i holds elements
// [offsets[i], offsets[i] + numels[i]) of the flat.
struct Fp8FlatLayout {
    std::vector<int64_t> offsets, numels;
};

// Per weight, max |x| over the elements of the weight inside `chunk`, which holds elements
// [begin, begin + chunk.numel()) of the flat; 0 for a weight with no element there. NaN if the
// part holds a NaN.
std::vector<float> fp8ChunkAmax(const torch::Tensor &chunk, int64_t begin, const Fp8FlatLayout &layout);

// The E4M3 codes (uint8, chunk.numel() of them) of `chunk`: each weight's elements cast with
// scales[i] (saturating), elements of no weight (padding) 0.
torch::Tensor fp8CastChunk(const torch::Tensor &chunk, int64_t begin, const Fp8FlatLayout &layout,
                           const std::vector<float> &scales);

// What the sharding engine needs from FP8 training to gather converted weights as codes.
class Fp8GatheredWeights {
public:
    virtual ~Fp8GatheredWeights() = default;
    // The scale a converted weight whose (whole) amax is `amax` is cast with.
    virtual float weightScale(float amax) const = 0;
    // The gathered codes (float8_e4m3fn, the weight's shape) and scale of `weight`, used by its
    // FP8 Linear until cleared (an undefined codes.data clears).
    virtual void setGathered(const torch::Tensor &weight, const Fp8Tensor &codes) = 0;
};

} // namespace accel::runtime
