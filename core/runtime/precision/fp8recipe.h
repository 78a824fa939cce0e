// The FP8 recipes (docs/fp8.md): which Linear layers run in FP8, which format each operand of
// each GEMM takes and how its scale is found. One Fp8Recipe per run; it creates the scaling of
// each converted layer and is told when a step's backward and optimizer step are over.
#pragma once

#include "core/plan/fp8config.h"
#include "core/plan/shardingplan.h"
#include "core/runtime/precision/fp8scaling.h"
#include "core/runtime/precision/fp8tensor.h"

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace accel::runtime {

class Collectives;
class PrecisionGradientReduction;

enum class Fp8Role { Input, Weight, GradOutput };

// The scaling of one converted layer.
class Fp8LayerScaling {
public:
    virtual ~Fp8LayerScaling() = default;
    virtual Fp8Format format(Fp8Role role) const = 0;
    // The scale to quantise `x` with now. `record`: a training pass (forward with gradients, or
    // backward) whose amax the recipe may keep for later scales.
    virtual float scaleFor(Fp8Role role, const torch::Tensor &x, bool record) = 0;
    // TE's override_linear_precision wgrad: the weight-gradient GEMM in high precision (float32
    // products, the result in the compute dtype) from unquantised operands.
    virtual bool weightGradientInHighPrecision() const { return false; }
    // Whether the input is cast to the compute dtype before it is quantised (TransformerEngine and
    // torchao do; MS-AMP quantises the input as it arrives). docs/fp8.md "Compute dtype".
    virtual bool castsInputToComputeDtype() const { return true; }
    // MS-AMP: the weight gradient is stored in FP8 E4M3 (quantised and dequantised here).
    virtual torch::Tensor finishWeightGradient(torch::Tensor gradient) { return gradient; }
};

// Every rank's current amaxes reduced with MAX, in place (identity with one process).
using ReduceMax = std::function<void(std::vector<float> &)>;

struct Fp8LinearInfo {
    std::string name; // "blocks.0.fc"
    int64_t inFeatures = 0, outFeatures = 0;
    size_t index = 0, count = 0; // position among the model's Linear layers (registration order)
};

class Fp8Recipe {
public:
    virtual ~Fp8Recipe() = default;
    static Result<std::unique_ptr<Fp8Recipe>> create(const Fp8Config &config, ReduceMax reduceMax);

    virtual const Fp8Config &config() const = 0;
    // Whether a Linear layer is converted; `why` says why not.
    virtual bool converts(const Fp8LinearInfo &layer, std::string *why) const = 0;
    virtual std::shared_ptr<Fp8LayerScaling> createLayer(const Fp8LinearInfo &layer) = 0;
    // Whether FP8 applies to forward passes in evaluation mode (TE: use_autocast_during_eval).
    virtual bool inEvaluation() const { return true; }
    // Once, on the converted layers' weights (MS-AMP: weights become scaled FP16).
    virtual void prepareWeights(const std::vector<torch::Tensor> &weights) { (void)weights; }
    // After a backward pass (TE: amaxes reduced across ranks, scales updated).
    virtual void afterBackward() {}
    // After an optimizer step on these parameters (MS-AMP: scaling windows roll, weights back to
    // scaled FP16).
    virtual void afterOptimizerStep(const std::vector<torch::Tensor> &weights) { (void)weights; }
    // The scaling state a resumed run needs to continue bit for bit (MS-AMP: each layer's scaling
    // windows and weight-gradient scale). loadState throws std::invalid_argument (or c10::Error
    // for a missing key) when the saved state does not fit this recipe's layers.
    virtual void saveState(torch::serialize::OutputArchive &archive) const { (void)archive; }
    virtual void loadState(torch::serialize::InputArchive &archive) { (void)archive; }

    // The scaling state a checkpoint keeps in a file of its own (fp8_state.safetensors, docs/fp8.md
    // "Checkpoints"): TE's amax histories and scales of every converted layer, as named float32
    // vectors, and settings that must match on resume. Empty for recipes with no such state.
    struct StateFile {
        std::map<std::string, std::vector<float>> tensors;
        std::map<std::string, std::string> metadata;
    };
    virtual StateFile scalingState() const { return {}; }
    // Restores scalingState(); a message naming what does not fit this run ("" when restored).
    virtual std::string restoreScalingState(const StateFile &state)
    {
        (void)state;
        return {};
    }
    // What starts afresh when a checkpoint has no such state ("" when the recipe keeps none there).
    virtual std::string freshStateDescription() const { return {}; }

    // What the strategies and the Accelerator ask of the recipe, through the precision policy
    // (mixedprecisionpolicy.h); the defaults are "nothing of its own".
    // Whether the recipe runs under `plan` (docs/fp8.md "Sharded training"): an error naming the
    // settings, or notes added to the plan for settings without effect under it.
    virtual Result<void> checkSharding(ShardingPlan &plan) const
    {
        (void)plan;
        return {};
    }
    // Whether a sharding engine under `plan` all-gathers the converted weights as FP8 codes.
    virtual bool gathersWeightsInFp8(const ShardingPlan &plan) const
    {
        (void)plan;
        return false;
    }
    // The scale of a converted weight gathered as FP8 codes, from its amax over the ranks (asked
    // only of a recipe that gathersWeightsInFp8).
    virtual float gatheredWeightScale(float amax) const
    {
        (void)amax;
        throw std::logic_error(config().describe() + " gathers no weights as FP8 codes");
    }
    // The recipe's own reduction of the converted weights' gradients across a data-parallel group
    // (the group outlives it), or null: they are reduced in float with the others.
    virtual std::shared_ptr<PrecisionGradientReduction> reduceGradients(const std::vector<torch::Tensor> &weights,
                                                                        Collectives &group)
    {
        (void)weights;
        (void)group;
        return nullptr;
    }
    // The optimizer the run steps instead of `optimizer` (null: `optimizer` itself). `report`: this
    // rank warns when a resumed run starts some of its state afresh.
    virtual std::unique_ptr<torch::optim::Optimizer> wrapOptimizer(torch::optim::Optimizer &optimizer, bool report)
    {
        (void)optimizer;
        (void)report;
        return nullptr;
    }
    // Bytes of optimizer state that optimizer keeps outside libtorch's optimizer state.
    virtual int64_t optimizerStateBytes() const { return 0; }
};

// MS-AMP's O1 / O2 (msamprecipe.cpp); create() makes every recipe.
std::unique_ptr<Fp8Recipe> makeMsAmpRecipe(const Fp8Config &config, ReduceMax reduceMax);

} // namespace accel::runtime
