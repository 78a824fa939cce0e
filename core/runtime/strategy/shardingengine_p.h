// The ShardingEngine's unit, shared by its implementation files (shardingengine.cpp,
// shardedcheckpoint.cpp).
#pragma once

#include "core/runtime/strategy/shardingengine.h"

namespace accel::runtime {

struct ShardingEngine::Unit {
    std::string name;
    std::vector<torch::Tensor> parameters; // the model's tensors, views into `full`
    std::vector<std::string> names;        // their names in the model
    std::vector<int64_t> offsets;
    int64_t chunk = 0;   // elements per rank
    torch::Tensor full;  // [chunk * shard size]
    torch::Tensor shard; // this rank's chunk: the tensor the optimizer steps
    bool shardParameters = false;
    bool reshardAfterForward = false;
    bool gathered = true;         // storage allocated and filled, or being filled by `pending`
    Collectives::Pending pending; // a prefetch in flight: call it before using `full`
    size_t trainable = 0;
    size_t ready = 0;
    bool reduced = false;
    // FSDP2 float8 all-gather (gatherInFp8): `fp8` marks a unit made of converted Linear weights
    // only, gathered as E4M3 codes into `codes` while its float32 `full` stays released;
    // `companion` leads from the unit a holder runs to that unit, gathered with it.
    bool fp8 = false;
    torch::Tensor codes; // [chunk * shard size] uint8
    Unit *companion = nullptr;
};

} // namespace accel::runtime
