// The DistributedStrategy of one prepared model, one per mesh dimension that holds model state
// (core/plan/devicemesh.h): dp_shard is the ShardingEngine (with dp_replicate's group for hybrid
// sharding), dp_replicate alone is DDP's gradient mean. A frozen model (no trainable parameter)
// gets the ShardingEngine only where it shards parameters (stage 3); below that it stays whole on
// every rank (DdpStrategy, no sync). Every strategy gets its dimension's Collectives (shared memory
// when the group's ranks are all on this host) and the precision policy to ask.
// Includes libtorch.
#pragma once

#include "core/plan/devicemesh.h"
#include "core/plan/shardingplan.h"
#include "core/runtime/distributedenv.h"
#include "core/runtime/strategy/collectives.h"
#include "core/runtime/strategy/distributedstrategy.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <memory>

namespace accel::runtime {

class MixedPrecisionPolicy;

struct StrategySetup {
    ShardingPlan plan;
    DeviceMesh mesh; // DeviceMesh::forPlan(plan, ...)
    DistributedEnv env;
    c10::intrusive_ptr<c10d::Backend> group; // every rank; null with one process
    c10::intrusive_ptr<c10d::Store> store;
    GroupFactory makeGroup; // a mesh dimension's sub-groups (the same name gives the same group)
    MixedPrecisionPolicy *precision = nullptr;
    bool sharedMemory = true; // the ranks compute on the CPU: groups on one host may use shared memory
    int64_t bucketCapBytes = 25 << 20;
    double timeoutS = 1800;
};

std::unique_ptr<DistributedStrategy> makeStrategy(const StrategySetup &setup, bool frozen = false);

// This rank's group along `dim`: shared memory when every member runs on this host (unless one of
// `switches` is 0), else the process group (the whole job's when the dimension spans every rank,
// else a sub-group).
std::unique_ptr<Collectives> meshCollectives(const StrategySetup &setup, MeshDim dim,
                                             const std::vector<std::string> &switches);

} // namespace accel::runtime
