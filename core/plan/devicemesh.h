// The device mesh: the job's ranks laid out on named dimensions in the order Accelerate's
// ParallelismConfig and torch's init_device_mesh use (dp_replicate, dp_shard, cp, tp; the last
// varies fastest). Every strategy takes its process group from the mesh: the ranks that differ from
// this rank only along its dimension. The sharding plan sets the dimensions (DDP: dp_replicate =
// every rank; ZeRO / FSDP: dp_shard = every rank; hybrid sharding: dp_shard = the ranks of a
// machine, dp_replicate = the machines; HSDP, FSDP2 with parallelism_config dp_replicate_size:
// dp_replicate = that size, dp_shard = the rest of the data-parallel ranks; with parallelism_config
// tp_size and cp_size, tp and cp = those sizes and the data-parallel dimensions the remaining ranks).
// Pure (no libtorch).
#pragma once

#include "core/plan/shardingplan.h"

#include <array>
#include <string>
#include <vector>

namespace accel::runtime {

enum class MeshDim { DpReplicate, DpShard, Cp, Tp };
inline constexpr std::array<MeshDim, 4> kMeshDims{MeshDim::DpReplicate, MeshDim::DpShard, MeshDim::Cp, MeshDim::Tp};
const char *meshDimName(MeshDim dim); // "dp_replicate", "dp_shard", "cp", "tp"

class DeviceMesh {
public:
    DeviceMesh() = default; // one rank
    // Sizes in kMeshDims order, each at least 1.
    explicit DeviceMesh(const std::array<int, 4> &sizes);
    // The data-parallel mesh `plan` asks for on `worldSize` ranks, `localWorldSize` of them per
    // machine (ShardingPlan::checkTopology has accepted them).
    static DeviceMesh forPlan(const ShardingPlan &plan, int worldSize, int localWorldSize);

    int size(MeshDim dim) const { return m_sizes[size_t(dim)]; }
    int worldSize() const;
    // `rank`'s place along `dim`, 0 .. size(dim) - 1.
    int coordinate(MeshDim dim, int rank) const;
    // The global ranks of `rank`'s group along `dim`, in order of their coordinate.
    std::vector<int> group(MeshDim dim, int rank) const;
    // "<dimension>/<first rank of the group>": the same on every member, unique per group.
    std::string groupName(MeshDim dim, int rank) const;
    std::string describe() const; // "dp_replicate 2 x dp_shard 4" (dimensions of size 1 left out)
    // The data-parallel replicas (dp_replicate x dp_shard): ranks that differ only along cp and tp
    // read the same samples (a cp group's ranks each take their part of every sequence).
    int dataParallelSize() const { return size(MeshDim::DpReplicate) * size(MeshDim::DpShard); }
    int dataParallelIndex(int rank) const { return rank / stride(MeshDim::DpShard); }

private:
    int stride(MeshDim dim) const;
    std::array<int, 4> m_sizes{1, 1, 1, 1};
};

} // namespace accel::runtime
