// MS-AMP's FP8 all-reduce of the converted layers' weight gradients (O1 and O2 under DDP): the
// gradients travel as FP8 E4M3 with one scale per tensor that every rank agrees on.
//
// Per tensor, after the backward that synchronises (not while accumulating):
//   1. amax = max |gradient| on this rank (NaN counts as infinity), all-reduced with MAX;
//   2. scale = pow2scale(amax, previous scale, 448) * float32(1 / sqrt(W)) — the power-of-two
//      scale MS-AMP uses everywhere, pre-divided by sqrt(W) so that the sum of W ranks stays in
//      range; it is this tensor's previous scale for the next step's zero or non-finite amax;
//   3. codes = saturate_E4M3(gradient * scale) on every rank;
//   4. the codes are summed across ranks in E4M3 arithmetic: in rank order, every addition
//      (exact in float32) rounded back to E4M3, saturating (the FP8 SUM of MS-AMP's collective,
//      here over an all-gather of the code bytes, since gloo has no FP8 reduction);
//   5. gradient = (sum / scale) / W on every rank (the same bits everywhere).
// The previous scales go into checkpoints with MS-AMP's state (saveState / loadState).
#pragma once

#include "core/runtime/precision/fp8recipe.h"
#include "core/runtime/precision/gradientreduction.h"

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace accel::runtime {

class Fp8GradientAllReduce : public PrecisionGradientReduction {
public:
    // Every rank's bytes (same length everywhere), in rank order.
    using AllGatherBytes = std::function<std::vector<torch::Tensor>(const torch::Tensor &bytes)>;

    Fp8GradientAllReduce(std::vector<torch::Tensor> weights, int worldSize, ReduceMax reduceMax,
                         AllGatherBytes allGather);

    // Replaces each weight's gradient by the reduced one (an absent gradient counts as zeros).
    void reduce() override;
    const std::vector<torch::Tensor> &weights() const override { return m_weights; }

    // The previous scales (every rank holds the same) in MS-AMP's checkpoint state (optimizer.bin),
    // float32 "fp8_msamp/allreduce/scales" [weights] and int64 "fp8_msamp/allreduce/world_size" [1]:
    // they include the world size's pre-scale, so a resume on another number of ranks starts afresh.
    void saveState(torch::serialize::OutputArchive &archive) const;
    // Restores them; "" when restored, else what starts afresh and why (a checkpoint saved without
    // them or on another number of ranks). Throws std::invalid_argument for another number of weights.
    std::string loadState(torch::serialize::InputArchive &archive);
    const std::vector<float> &scales() const { return m_scales; }
    // Every previous scale 1, as at the start of a run.
    void resetScales() { m_scales.assign(m_weights.size(), 1.0f); }

    // This rank's side of the last reduce(), for checking: the gradients before it, the agreed
    // scales and this rank's E4M3 codes (uint8).
    struct Local {
        std::vector<torch::Tensor> gradients;
        std::vector<float> amax; // this rank's, before the MAX
        std::vector<float> scales;
        std::vector<torch::Tensor> codes;
    };
    const Local &lastLocal() const { return m_local; }

    // Step 4 on its own: E4M3 codes (uint8, one tensor per rank) summed in rank order, each
    // addition rounded to E4M3 saturating; the result as float32 values.
    static torch::Tensor sumInE4m3(const std::vector<torch::Tensor> &codes);
    // float32(1 / sqrt(worldSize)), the pre-scale of step 2.
    static float preScale(int worldSize);

private:
    std::vector<torch::Tensor> m_weights;
    int m_worldSize;
    ReduceMax m_reduceMax;
    AllGatherBytes m_allGather;
    std::vector<float> m_scales; // the previous step's, per weight (1 at first)
    Local m_local;
};

} // namespace accel::runtime
