#include "core/plan/devicemesh.h"

#include <algorithm>

namespace accel::runtime {

const char *meshDimName(MeshDim dim)
{
    switch (dim) {
    case MeshDim::DpReplicate:
        return "dp_replicate";
    case MeshDim::DpShard:
        return "dp_shard";
    case MeshDim::Cp:
        return "cp";
    case MeshDim::Tp:
        return "tp";
    }
    return "?";
}

DeviceMesh::DeviceMesh(const std::array<int, 4> &sizes) : m_sizes(sizes)
{
    for (int &size : m_sizes)
        size = std::max(1, size);
}

DeviceMesh DeviceMesh::forPlan(const ShardingPlan &plan, int worldSize, int localWorldSize)
{
    const int world = std::max(1, worldSize);
    const int local = std::max(1, localWorldSize);
    // Tensor and context parallel: tp the last (fastest) dimension, cp before it, the rest data
    // parallel (checkTopology has refused sizes that do not divide the world, and hybrid sharding).
    // HSDP (parallelism_config dp_replicate_size with FSDP2): dp_replicate x dp_shard over the data ranks.
    const int tp = std::max(1, plan.tensorParallelSize), cp = std::max(1, plan.contextParallelSize);
    const int replicate = plan.hybridReplicas();
    const int data = world % (tp * cp) == 0 ? world / (tp * cp) : world;
    if (tp * cp > 1 && world % (tp * cp) == 0) {
        if (!plan.sharded())
            return DeviceMesh({data, 1, cp, tp});
        return data % replicate == 0 ? DeviceMesh({replicate, data / replicate, cp, tp})
                                     : DeviceMesh({1, data, cp, tp});
    }
    if (!plan.sharded())
        return DeviceMesh({world, 1, 1, 1});
    if (replicate > 1 && world % replicate == 0)
        return DeviceMesh({replicate, world / replicate, 1, 1});
    // Hybrid: shard among a machine's ranks, replicate across machines (ranks r = machine * local + i).
    if (plan.hybrid && local < world)
        return DeviceMesh({world / local, local, 1, 1});
    return DeviceMesh({1, world, 1, 1});
}

int DeviceMesh::worldSize() const
{
    int world = 1;
    for (int size : m_sizes)
        world *= size;
    return world;
}

int DeviceMesh::stride(MeshDim dim) const
{
    int stride = 1;
    for (size_t d = size_t(dim) + 1; d < m_sizes.size(); ++d)
        stride *= m_sizes[d];
    return stride;
}

int DeviceMesh::coordinate(MeshDim dim, int rank) const
{
    return rank / stride(dim) % size(dim);
}

std::vector<int> DeviceMesh::group(MeshDim dim, int rank) const
{
    const int step = stride(dim);
    const int first = rank - coordinate(dim, rank) * step;
    std::vector<int> members;
    for (int k = 0; k < size(dim); ++k)
        members.push_back(first + k * step);
    return members;
}

std::string DeviceMesh::groupName(MeshDim dim, int rank) const
{
    return std::string(meshDimName(dim)) + "/" + std::to_string(group(dim, rank).front());
}

std::string DeviceMesh::describe() const
{
    std::string text;
    for (MeshDim dim : kMeshDims) {
        if (size(dim) > 1)
            text += (text.empty() ? "" : " x ") + std::string(meshDimName(dim)) + " " + std::to_string(size(dim));
    }
    return text.empty() ? "one rank" : text;
}

} // namespace accel::runtime
