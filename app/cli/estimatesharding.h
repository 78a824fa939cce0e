// `accel estimate-memory MODEL --config_file CONFIG`: per-rank bytes of parameters, gradients and
// Adam state under the strategy the config asks for (DDP, FSDP, DeepSpeed ZeRO) on the device mesh
// it lays out (parallelism_config: dp_replicate x dp_shard x cp x tp), predicted by the runtime's
// own ShardingPlan, DeviceMesh and tensor-parallel split (core/plan/tensorparallelsplit.h) from the
// environment `accel launch` would give rank 0, so the figure and the run cannot disagree about
// what is split or sharded.
#pragma once

#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::bigmodel {
struct LoadedModel;
}

namespace accel::cli {

struct ShardingEstimateRow {
    std::string dtype;
    int64_t parameters = 0; // bytes per rank
    int64_t gradients = 0;
    int64_t optimizerState = 0;
    // The same model under DDP on the same processes, for comparison.
    int64_t ddpParameters = 0;
    int64_t ddpGradients = 0;
    int64_t ddpOptimizerState = 0;
    int64_t ddpTotal() const { return ddpParameters + ddpGradients + ddpOptimizerState; }
    int64_t total() const { return parameters + gradients + optimizerState; }
};

// Parameters a run holds but does not train (LoRA's frozen base): sharded as the plan shards
// parameters, without gradients or optimizer state. Under mixed precision they stay in the
// checkpoint's dtypes (`storedBytes`), without it in float32.
struct FrozenParameters {
    uint64_t count = 0;
    uint64_t storedBytes = 0;
};

// What the split over the mesh's tp dimension (parallelism_config tp_size above 1) needs to know of
// the trained model: the job's recipe ("" for a model folder, a script's model) and file, the model
// as read (tensor names and shapes, config.json), LoRA's adapted layers, and the job's
// training.vocab_parallel / training.sequence_parallel.
struct MeshModel {
    std::string recipe;
    std::string jobFile;
    const bigmodel::LoadedModel *model = nullptr;
    int64_t loraRank = 0;
    std::vector<std::string> loraLayers;
    bool vocabParallel = false;
    bool sequenceParallel = false;
};

struct ShardingEstimate {
    std::string configFile;
    std::string runDirectory; // estimateShardingForRun's run
    std::string strategy;     // ShardingPlan::describe()
    int worldSize = 1;
    int processesPerMachine = 1;
    std::string optimizer = "Adam"; // what keeps `optimizerStates` tensors per parameter
    int optimizerStates = 2;
    std::string mixedPrecision = "no"; // the run's: the job's training.mixed_precision, else the config's
    std::string fp8Recipe;             // with fp8: Fp8Config::describe()
    // Bytes per parameter of the optimizer state when a recipe decides them (MS-AMP: O2 3, O1 8);
    // 0: `optimizerStates` tensors of the row's dtype.
    int optimizerStateBytesPerParameter = 0;
    uint64_t frozenParameters = 0; // included in the rows' parameter bytes
    int64_t frozenBytes = 0;       // their bytes on one rank holding them whole
    // The device mesh (runtime::DeviceMesh sizes in kMeshDims order: dp_replicate, dp_shard, cp, tp).
    std::array<int, 4> mesh{1, 1, 1, 1};
    std::string meshDescription; // DeviceMesh::describe()
    bool vocabParallel = false;
    bool sequenceParallel = false;
    // With tp above 1: the trained parameters in tensors tp splits (whole) and those one tp rank
    // holds before the data-parallel sharding (frozen ones aside).
    uint64_t tensorParallelSplit = 0;
    uint64_t tensorParallelRankParameters = 0;
    std::vector<std::string> notes; // what the figures leave out or how the mesh holds them
    std::vector<ShardingEstimateRow> rows;
};

// True when this build can predict per-rank memory (the runtime's torch-free planning library).
bool haveShardingEstimate();
// `numProcesses` overrides the config's num_processes. Dtypes as estimate-memory names them; int8
// and int4 are skipped (no training figures, as in Accelerate's table). `optimizerStates` state
// tensors per parameter (Adam 2, SGD with momentum 1) kept by `optimizer`. An empty `configFile`
// is one process without a config (DDP's figures). `mixedPrecision` is a job's
// training.mixed_precision ("" = the config's). Under fp8 with the MS-AMP recipe an Adam / AdamW
// optimizer keeps MS-AMP's moments (O2: 1 + 2 bytes per parameter); a bad ACCELERATE_FP8_* value
// from the config is the error the run would report. `parameters` are the trained ones; `frozen`
// adds the held, untrained ones. With parallelism_config tp_size above 1 `meshModel` names the
// model whose tensors split (refused by the runtime's words when it has no tensor-parallel plan).
Result<ShardingEstimate> estimateSharding(const std::string &configFile, std::optional<int> numProcesses,
                                          uint64_t parameters, const std::vector<std::string> &dtypes,
                                          const std::string &optimizer = "Adam", int optimizerStates = 2,
                                          const std::string &mixedPrecision = {}, const FrozenParameters &frozen = {},
                                          const MeshModel &meshModel = {});
// The same figures under the settings a run's ranks were started with: run.json's process counts
// and the environment `accel launch` gave rank 0 (its plan), with or without a config file.
Result<ShardingEstimate> estimateShardingForRun(const std::string &runDirectory, uint64_t parameters,
                                                const std::vector<std::string> &dtypes,
                                                const std::string &optimizer = "Adam", int optimizerStates = 2,
                                                const std::string &mixedPrecision = {},
                                                const FrozenParameters &frozen = {}, const MeshModel &meshModel = {});
// The processes in total `accel launch --config_file CONFIG [--num_processes N]` starts (the same
// merge); without a config, `numProcesses` or 1.
Result<int> launchedProcesses(const std::string &configFile, std::optional<int> numProcesses);
nlohmann::ordered_json toJson(const ShardingEstimate &estimate);
std::string renderShardingEstimate(const ShardingEstimate &estimate);

} // namespace accel::cli
