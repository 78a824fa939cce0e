#include "core/runtime/strategy/strategyfactory.h"

#include "core/runtime/strategy/ddpstrategy.h"
#include "core/runtime/strategy/shardingengine.h"

namespace accel::runtime {

std::unique_ptr<DistributedStrategy> makeStrategy(const StrategySetup &setup, bool frozen)
{
    const ShardingPlan &plan = setup.plan;
    const DistributedEnv &env = setup.env;
    if (!setup.group || !plan.sharded() || (frozen && plan.stage < 3))
        return std::make_unique<DdpStrategy>(plan.strategy, setup.group, setup.store, env, setup.bucketCapBytes,
                                             setup.timeoutS);
    const int local = std::max(1, env.localWorldSize);
    if (plan.hybrid && local < env.worldSize) {
        // Ranks r = machine * local + i: shard among the machine's ranks, replicate across machines.
        const int machine = env.rank / local, index = env.rank % local, machines = env.worldSize / local;
        auto shard = setup.makeGroup("hybrid/machine" + std::to_string(machine), index, local);
        auto replica = setup.makeGroup("hybrid/replica" + std::to_string(index), machine, machines);
        return std::make_unique<ShardingEngine>(plan, std::make_unique<ProcessGroupCollectives>(shard),
                                                std::make_unique<ProcessGroupCollectives>(replica));
    }
    return std::make_unique<ShardingEngine>(plan, std::make_unique<ProcessGroupCollectives>(setup.group));
}

} // namespace accel::runtime
