#include "core/runtime/strategy/strategyfactory.h"

#include "core/common/log.h"
#include "core/runtime/shmcollectives.h"
#include "core/runtime/strategy/ddpstrategy.h"
#include "core/runtime/strategy/shardingengine.h"

namespace accel::runtime {

namespace {

// The variables that turn shared memory off: for the sharding engine's collectives, and for DDP's
// gradient mean (ACCEL_SHM_ALLREDUCE=0 turns off every shared-memory path).
const std::vector<std::string> kShardingSwitches{"ACCEL_SHM_COLLECTIVES", "ACCEL_SHM_ALLREDUCE"};
const std::vector<std::string> kGradientSwitches{"ACCEL_SHM_ALLREDUCE"};

} // namespace

std::unique_ptr<Collectives> meshCollectives(const StrategySetup &setup, MeshDim dim,
                                             const std::vector<std::string> &switches)
{
    const DeviceMesh &mesh = setup.mesh;
    const int rank = setup.env.rank;
    std::vector<int> members = mesh.group(dim, rank);
    const std::string name = mesh.groupName(dim, rank);
    const int groupRank = mesh.coordinate(dim, rank);
    const int size = int(members.size());
    c10::intrusive_ptr<c10d::Backend> group =
        size == mesh.worldSize() ? setup.group : setup.makeGroup(name, groupRank, size);
    if (setup.sharedMemory && setup.store && size > 1) {
        std::string why;
        if (auto shm = ShmCollectives::create(*setup.store, name, groupRank, std::move(members), setup.timeoutS, &why,
                                              ShmCollectives::kDefaultSlotBytes, switches))
            return shm;
        accel::log::debug("runtime", std::string(meshDimName(dim)) + " collectives (" + name +
                                         ") through the process group: " + why);
    }
    return std::make_unique<ProcessGroupCollectives>(std::move(group));
}

std::unique_ptr<DistributedStrategy> makeStrategy(const StrategySetup &setup, bool frozen)
{
    const ShardingPlan &plan = setup.plan;
    const DeviceMesh &mesh = setup.mesh;
    // dp_shard: the sharding engine, its chunks' gradients also averaged over dp_replicate (hybrid).
    if (setup.group && plan.sharded() && !(frozen && plan.stage < 3)) {
        std::unique_ptr<Collectives> replicas;
        if (mesh.size(MeshDim::DpReplicate) > 1)
            replicas = meshCollectives(setup, MeshDim::DpReplicate, kShardingSwitches);
        return std::make_unique<ShardingEngine>(plan, meshCollectives(setup, MeshDim::DpShard, kShardingSwitches),
                                                std::move(replicas), setup.precision);
    }
    // dp_replicate alone: DDP's gradient mean (nothing to synchronise on one process or for a frozen model).
    std::unique_ptr<Collectives> replicas;
    if (setup.group && !frozen && mesh.size(MeshDim::DpReplicate) > 1)
        replicas = meshCollectives(setup, MeshDim::DpReplicate, kGradientSwitches);
    return std::make_unique<DdpStrategy>(plan.strategy, std::move(replicas), setup.precision, setup.bucketCapBytes);
}

} // namespace accel::runtime
