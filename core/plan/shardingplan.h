// ShardingPlan: what a rank shards, from either configuration language the launcher exports
// (Accelerate's fsdp_config as FSDP_* variables, deepspeed_config as ACCELERATE_DEEPSPEED_* or a
// DeepSpeed JSON file). Pure (no libtorch): one plan for the one ShardingEngine. A setting the
// engine does not implement is an error naming the key and the value, never a quiet fallback.
// docs/sharding.md describes every key and what the engine does with it.
#pragma once

#include "core/common/result.h"
#include "core/plan/envlookup.h"
#include "core/plan/trainingmemory.h"

#include <cstdint>
#include <string>
#include <vector>

namespace accel::runtime {

enum class ShardingSource { None, Fsdp, DeepSpeed };
enum class WrapPolicy { None, TransformerBlock, Size };
enum class StateDictType { Full, Sharded, Local };

// Gradient averaging around a SUM reduction: divide by `pre` before, by `post` after.
struct DivideFactors {
    double pre = 1;
    double post = 1;
};

// FSDP's factors: pre is a power of two near sqrt(worldSize), post = worldSize / pre.
DivideFactors fsdpDivideFactors(int worldSize);

struct ShardingPlan {
    ShardingSource source = ShardingSource::None;
    std::string strategy = "DDP"; // FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, ..., ZeRO-0..3
    int fsdpVersion = 0;          // 1 or 2 for FSDP
    // What is sharded, as ZeRO stages: 0 nothing, 1 optimizer state, 2 also gradients, 3 also parameters.
    int stage = 0;
    bool reshardAfterForward = false; // stage 3: free gathered parameters after forward
    bool hybrid = false;              // shard inside a machine, replicate across machines
    bool offloadOptimizerState = false;
    bool offloadParameters = false; // FSDP: parameters and gradients; DeepSpeed: parameters (stage 3)
    WrapPolicy wrapPolicy = WrapPolicy::None;
    std::vector<std::string> wrapClasses; // TRANSFORMER_BASED_WRAP class names
    int64_t minNumParams = 0;             // SIZE_BASED_WRAP
    std::string backwardPrefetch;         // FSDP1: BACKWARD_PRE, BACKWARD_POST, NO_PREFETCH or empty
    bool forwardPrefetch = false;
    StateDictType stateDictType = StateDictType::Full;
    bool syncModuleStates = true;
    bool cpuRamEfficientLoading = false;
    bool zero3Init = false;
    bool zero3Save16BitModel = false;
    double gradientClipping = 0;       // DeepSpeed gradient_clipping; 0 = none
    int gradientAccumulationSteps = 0; // DeepSpeed's; 0 = not set
    std::string deepSpeedConfigFile;
    // Accelerate's parallelism_config tp_size (PARALLELISM_CONFIG_TP_SIZE, read with
    // ACCELERATE_USE_PARALLELISM_CONFIG): the device mesh's tp dimension (devicemesh.h); the data-
    // parallel dimensions above hold the other ranks.
    int tensorParallelSize = 1;
    // parallelism_config cp_size (PARALLELISM_CONFIG_CP_SIZE): the mesh's cp dimension, whose ranks
    // each hold a part of every sequence; cp_comm_strategy (PARALLELISM_CONFIG_CP_COMM_STRATEGY,
    // Accelerate's default allgather) how they exchange keys and values: "allgather" or "alltoall".
    int contextParallelSize = 1;
    std::string contextParallelExchange = "allgather";
    // parallelism_config dp_replicate_size (PARALLELISM_CONFIG_DP_REPLICATE_SIZE): with a sharded plan
    // (FSDP2), HSDP: the data-parallel ranks are dp_replicate x dp_shard, the engine shards over
    // dp_shard and averages the chunks' gradients over dp_replicate too.
    int dataParallelReplicateSize = 1;
    // HSDP's replicas: dataParallelReplicateSize under FSDP2, else 1 (FSDP1's HYBRID_SHARD replicates
    // by machine; DeepSpeed and DDP do not read it).
    int hybridReplicas() const
    {
        return source == ShardingSource::Fsdp && fsdpVersion == 2 && sharded() ? std::max(1, dataParallelReplicateSize)
                                                                               : 1;
    }
    // Accepted settings that cannot change this run's numbers (said once by rank 0).
    std::vector<std::string> notes;

    bool sharded() const { return stage > 0; }
    // How gradients are averaged with a SUM collective over `worldSize` ranks.
    DivideFactors divideFactors(int worldSize) const;
    // Hybrid sharding needs the same number of ranks on every machine; tp_size x cp_size must divide
    // the world size (and is refused with hybrid sharding), dp_replicate_size the data-parallel ranks.
    Result<void> checkTopology(int worldSize, int localWorldSize) const;
    std::string describe() const; // "FSDP1 FULL_SHARD: parameters, gradients, optimizer state sharded"
    // Per-rank bytes of parameters, gradients and optimizer state the engine holds after backward
    // for `parameters` elements of `bytesPerElement`, `optimizerStates` state tensors per parameter
    // (AdamW 2, SGD with momentum 1), on `worldSize` ranks, `localWorldSize` per machine (hybrid
    // shards inside a machine); the shards span dp_shard only (worldSize / (cp_size x tp_size x
    // dp_replicate_size)).
    // Padding of the flat parameters is left out.
    TrainingMemory predictMemory(int64_t parameters, int bytesPerElement, int optimizerStates, int worldSize,
                                 int localWorldSize) const;
};

// The plan the launcher's variables ask for (getenv by default). Without ACCELERATE_USE_FSDP or
// ACCELERATE_USE_DEEPSPEED the plan is plain DDP; the tensor- and context-parallel sizes come from
// PARALLELISM_CONFIG_TP_SIZE and PARALLELISM_CONFIG_CP_SIZE.
Result<ShardingPlan> shardingPlanFromEnvironment(const EnvLookup &lookup = {});

// The ZeRO part of a DeepSpeed JSON file applied to `plan` (stage, offload, clipping, accumulation).
// The file goes through the input guard (a regular file of at most 1 MiB, 64 levels deep).
Result<void> applyDeepSpeedJson(const std::string &path, ShardingPlan &plan);
// The same for the file's text; `source` names it in errors.
Result<void> applyDeepSpeedJsonText(const std::string &text, const std::string &source, ShardingPlan &plan);

const char *stateDictTypeName(StateDictType type);

} // namespace accel::runtime
