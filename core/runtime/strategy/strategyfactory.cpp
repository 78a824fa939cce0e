#include "core/runtime/strategy/strategyfactory.h"

#include "core/common/log.h"
#include "core/runtime/shmcollectives.h"
#include "core/runtime/strategy/ddpstrategy.h"
#include "core/runtime/strategy/shardingengine.h"

namespace accel::runtime {

namespace {

// Shared memory when every member of the group runs on this host, else the process group.
// `members`: the group's global ranks in group order.
std::unique_ptr<Collectives> collectivesOf(const StrategySetup &setup, const std::string &name,
                                           c10::intrusive_ptr<c10d::Backend> group, std::vector<int> members)
{
    if (setup.store && members.size() > 1) {
        std::string why;
        const int groupRank = group->getRank();
        if (auto shm = ShmCollectives::create(*setup.store, name, groupRank, std::move(members), setup.timeoutS, &why))
            return shm;
        accel::log::debug("runtime", "sharding collectives (" + name + ") through the process group: " + why);
    }
    return std::make_unique<ProcessGroupCollectives>(std::move(group));
}

std::vector<int> ranks(int first, int count, int stride)
{
    std::vector<int> members;
    for (int i = 0; i < count; ++i)
        members.push_back(first + i * stride);
    return members;
}

} // namespace

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
        const std::string shardName = "hybrid/machine" + std::to_string(machine);
        const std::string replicaName = "hybrid/replica" + std::to_string(index);
        auto shard = setup.makeGroup(shardName, index, local);
        auto replica = setup.makeGroup(replicaName, machine, machines);
        return std::make_unique<ShardingEngine>(
            plan, collectivesOf(setup, shardName, shard, ranks(machine * local, local, 1)),
            collectivesOf(setup, replicaName, replica, ranks(index, machines, local)));
    }
    return std::make_unique<ShardingEngine>(plan,
                                            collectivesOf(setup, "world", setup.group, ranks(0, env.worldSize, 1)));
}

} // namespace accel::runtime
