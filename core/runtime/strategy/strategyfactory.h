// The DistributedStrategy of one prepared model, from the plan: DDP (also NO_SHARD, ZeRO-0 and any
// plan on one process) or the ShardingEngine, with the machine and replica groups that hybrid
// sharding needs. A frozen model (no trainable parameter) gets the ShardingEngine only where it
// shards parameters (stage 3); below that it stays whole on every rank (DdpStrategy, no sync).
// Includes libtorch.
#pragma once

#include "core/plan/shardingplan.h"
#include "core/runtime/distributedenv.h"
#include "core/runtime/strategy/collectives.h"
#include "core/runtime/strategy/distributedstrategy.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <memory>

namespace accel::runtime {

struct StrategySetup {
    ShardingPlan plan;
    DistributedEnv env;
    c10::intrusive_ptr<c10d::Backend> group; // every rank; null with one process
    c10::intrusive_ptr<c10d::Store> store;
    GroupFactory makeGroup; // hybrid sharding's sub-groups (the same prefix gives the same group)
    int64_t bucketCapBytes = 25 << 20;
    double timeoutS = 1800;
};

std::unique_ptr<DistributedStrategy> makeStrategy(const StrategySetup &setup, bool frozen = false);

} // namespace accel::runtime
