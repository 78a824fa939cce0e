// ShardingEngine: ZeRO stages 1-3 and FSDP's FULL_SHARD / SHARD_GRAD_OP / HYBRID strategies as
// one engine (the plan says which). Each unit (a module offered with wrap(), the rest of the
// model forming one more) is one flat parameter padded to a multiple of the shard group's size;
// rank r owns chunk r, which is the tensor the optimizer steps.
//   stage 1: gradients all-reduced (averaged with the plan's divide factors), the optimizer
//            state only for this rank's chunk; the chunks all-gathered after each step.
//   stage 2: gradients reduce-scattered as each unit's gradients are complete in backward.
//   stage 3: the flat parameter exists only between all-gather and release: gathered before
//            the unit's forward, released after it (reshard after forward), gathered again when
//            backward reaches the unit, released once its gradients are reduce-scattered.
// Prefetch (stage 3): with forward prefetch the all-gather of the unit that runs next in forward
// starts as a unit's forward begins; with backward prefetch that of the unit backward reaches next
// starts as backward reaches a unit (BACKWARD_PRE) or once the unit's gradients are reduced
// (BACKWARD_POST). The orders are those recorded in the first step; one prefetch ahead at most.
// Hybrid: shard group = the ranks of one machine, gradients then all-reduced across machines.
// Parameters outside every accepted unit stay whole on every rank (their gradients and optimizer
// state are still sharded): wrap the model itself to shard them too.
// A unit whose parameters are partly frozen (LoRA) is two flat parameters, the frozen one gathered
// with the trained one and never reduced, stepped or given optimizer state.
// A frozen model (no parameter requires a gradient, e.g. a distillation teacher) is sharded for
// memory only: at stage 3 every unit, the root too, is gathered for its forward and released
// right after it (gathered again if backward passes through it); nothing is reduced.
// zero3_init_flag (DeepSpeed's zero.Init): buildUnit() makes a module a unit as soon as the
// program has built it, before prepareModel(), so no rank ever holds every unit whole at once.
// The precision policy says which weights are all-gathered as FP8 codes (FSDP2 with the FP8 recipe
// AO's float8 all-gather, docs/fp8.md "Sharded training"): gatherInFp8().
#pragma once

#include "core/plan/shardingplan.h"
#include "core/runtime/strategy/collectives.h"
#include "core/runtime/strategy/distributedstrategy.h"

#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

namespace accel::runtime {

class Fp8GatheredWeights;
class MixedPrecisionPolicy;

class ShardingEngine : public DistributedStrategy, public UnitHost {
public:
    // `shardGroup` spans the ranks that split the parameters; `replicaGroup` (hybrid only) the
    // ranks holding the same chunk on other machines. worldSize = shard size x replica size.
    // `precision` (may be null) is asked at prepareModel in which format weights are gathered.
    ShardingEngine(ShardingPlan plan, std::unique_ptr<Collectives> shardGroup,
                   std::unique_ptr<Collectives> replicaGroup = nullptr, MixedPrecisionPolicy *precision = nullptr);
    ~ShardingEngine() override;

    std::string name() const override { return m_plan.strategy; }
    std::string gradientTransport() const override;
    void prepareModel(const std::shared_ptr<torch::nn::Module> &model,
                      const std::vector<std::shared_ptr<ShardedModule>> &units) override;
    void prepareOptimizer(torch::optim::Optimizer &optimizer) override;
    void setSyncEnabled(bool enabled) override { m_sync = enabled; }
    void afterBackward(bool sync) override;
    void finishGradients() override {}
    double clipGradNorm(double maxNorm, double normType) override;
    double gradientNormPart(double normType) override;
    void scaleGradients(double factor) override;
    void afterOptimizerStep() override;
    void zeroGrad() override;
    void unshardModel() override;
    bool shardsParameters() const override;
    std::vector<torch::Tensor> heldParameters() const override;

    // Every rank writes the pieces of its chunks (SHARDED_STATE_DICT) or rank 0 the whole model
    // (FULL_STATE_DICT); optimizer state always in pieces. Loads on any number of ranks.
    bool savesOwnState() const override { return true; }
    Result<void> saveState(const std::string &folder, const StateSlot &slot) override;
    Result<void> loadState(const std::string &folder, const StateSlot &slot) override;

    void beforeForward(size_t unit) override;
    void afterForward(size_t unit, const at::Tensor &output) override;
    // The unit whole for `change`, then every rank keeps its chunk of rank 0's result (DeepSpeed's
    // GatheredParameters(modifier_rank=0)); a released unit is released again.
    void modifyUnit(size_t unit, const std::function<void()> &change) override;

    // How every rank gets rank 0's values of a tensor (the Accelerator's broadcast over all ranks);
    // buildUnit() and modifyUnit() need it.
    void setBroadcast(std::function<void(torch::Tensor &)> broadcast) { m_broadcast = std::move(broadcast); }
    // zero3_init_flag, before prepareModel(): makes `holder`'s module a unit now. Its parameters
    // (those no unit built earlier holds) become views into the unit's flat parameter, which every
    // rank takes from rank 0 (DeepSpeed broadcasts each parameter from rank 0 as it partitions it);
    // this rank keeps its chunk and, at stage 3, the flat parameter's storage is released.
    // prepareModel() takes the unit as built; it must be part of the model prepared.
    void buildUnit(const std::shared_ptr<ShardedModule> &holder);
    // The units buildUnit() made, and their parameters (whose storage is released at stage 3).
    const std::vector<std::shared_ptr<ShardedModule>> &builtUnits() const { return m_built; }
    std::vector<torch::Tensor> builtParameters() const;

    // The model's parameters are the same on every rank (loaded from one file by each): at stage 3
    // a unit is made from this rank's chunk only, read from the parameters' own tensors (never
    // copied whole), and its flat parameter starts released. Call before prepareModel.
    void readOwnChunksOnly(bool on) { m_ownChunksOnly = on; }

    const ShardingPlan &plan() const { return m_plan; }
    size_t unitCount() const { return m_units.size(); }

    struct Unit; // shardingengine_p.h

private:
    // FSDP2 with torchao's float8 all-gather (docs/fp8.md "Sharded training"): in every unit whose
    // parameters are sharded, these (converted Linear) weights form a unit of their own — a second
    // flat parameter with its own chunking, gathered and released with the unit — all-gathered as
    // E4M3 codes with the scale of each whole weight, which `target` hands to the FP8 Linear.
    // Their gradients are reduce-scattered in float32 as any other. Before prepareModel.
    void gatherInFp8(std::vector<torch::Tensor> weights, Fp8GatheredWeights *target);
    // Every rank's pieces of `chunks[k][unit]` named prefixes[k] + parameter name, and the index.
    Result<void> writeFolder(const std::string &folder, const std::string &kind,
                             const std::vector<std::vector<torch::Tensor>> &chunks,
                             const std::vector<std::string> &prefixes, int64_t step) const;
    // saveState of a model split by tensor parallelism: every tensor whole, written by one rank.
    Result<void> saveWhole(const std::string &folder, const StateSlot &slot);
    torch::Tensor flatten(const Unit &unit, const std::map<std::string, torch::Tensor> &tensors,
                          const std::string &prefix) const;
    bool accepts(const torch::nn::Module &module, bool root) const;
    void addUnit(const std::string &name, std::vector<torch::Tensor> parameters, bool wrapped, bool root);
    // The flat parameter of `parameters`, which become views into it (no chunk yet). With
    // `ownChunkOnly` (readOwnChunksOnly) only this rank's chunk is read, into `shard`, and `full`
    // is allocated untouched for the views.
    std::unique_ptr<Unit> makeUnit(const std::string &name, std::vector<torch::Tensor> parameters,
                                   bool ownChunkOnly = false) const;
    // Names, gradient hooks and release policy of unit `index` (at prepareModel: whole or built).
    void attachUnit(size_t index, bool wrapped, bool root);
    void gather(Unit &unit);
    bool splitFp8Weights(const std::string &name, const std::vector<torch::Tensor> &parameters, bool wrapped,
                         bool root);
    bool splitFrozen(const std::string &name, const std::vector<torch::Tensor> &parameters, bool wrapped, bool root);
    void gatherCodes(Unit &unit);
    void ensureGathered(Unit &unit);
    void prefetch(const std::unordered_map<size_t, size_t> &next, size_t after);
    void finishPrefetch(Unit &unit);
    void release(Unit &unit);
    void recordOrder(std::vector<size_t> &order, std::unordered_map<size_t, size_t> &next, size_t unit);
    void reduce(Unit &unit);
    void markReady(size_t unit);
    // Releases the frozen companions of the units backward gathered so far (m_frozenInBackward).
    void releaseFrozenCompanions();

    ShardingPlan m_plan;
    std::unique_ptr<Collectives> m_shard;
    std::unique_ptr<Collectives> m_replica;
    MixedPrecisionPolicy *m_precision = nullptr;
    DivideFactors m_factors;
    std::vector<std::shared_ptr<ShardedModule>> m_holders; // the accepted units
    std::vector<std::shared_ptr<ShardedModule>> m_built;   // buildUnit()'s, the first units
    std::function<void(torch::Tensor &)> m_broadcast;
    std::vector<std::unique_ptr<Unit>> m_units;
    std::unordered_map<const void *, std::string> m_names; // parameter -> its name in the model
    std::shared_ptr<torch::nn::Module> m_model;
    std::vector<std::shared_ptr<torch::autograd::Node>> m_accumulators;
    std::vector<uintptr_t> m_hookKeys;
    // Prefetch: the units in the order the first step ran them, and the one after each.
    bool m_forwardPrefetch = false;
    enum class BackwardPrefetch { None, Pre, Post } m_backwardPrefetch = BackwardPrefetch::None;
    bool m_recording = true; // until the first backward ends
    std::vector<size_t> m_forwardOrder, m_backwardOrder;
    std::unordered_map<size_t, size_t> m_nextForward, m_nextBackward;
    size_t m_prefetches = 0, m_gathers = 0;       // parameter all-gathers started ahead / on demand
    int64_t m_gatheredBytes = 0, m_codeBytes = 0; // all-gathered: float flat parameters, E4M3 codes
    std::vector<torch::Tensor> m_fp8Weights;      // gatherInFp8
    Fp8GatheredWeights *m_fp8Target = nullptr;
    bool m_splitting = false;
    bool m_sync = true;
    bool m_frozen = false; // no parameter of the model requires a gradient
    bool m_ownChunksOnly = false;
    std::vector<size_t> m_frozenInBackward; // units gathered for backward whose companions may be frozen
};

} // namespace accel::runtime
