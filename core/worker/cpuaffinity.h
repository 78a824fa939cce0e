// enable_cpu_affinity (ACCELERATE_CPU_AFFINITY): a rank pins itself to the CPUs of its NUMA node
// as it starts, before libtorch starts any thread (new threads inherit the mask). Accelerate does it
// for GPU ranks, with the node NVML gives for the rank's GPU; a native job does the same for CUDA
// ranks and spreads CPU ranks over the machine's nodes in blocks of local ranks. Torch-free.
#pragma once

#include "core/common/result.h"

#include <optional>
#include <string>

namespace accel::worker {

// The node of local rank `localRank` of `localWorldSize` CPU ranks on `nodeCount` nodes:
// localRank * nodeCount / localWorldSize (2 nodes, 4 ranks: 0 0 1 1; 4 nodes, 2 ranks: 0 2).
int numaNodeOfCpuRank(int localRank, int localWorldSize, int nodeCount);

// The NUMA node of a PCI device ("00000000:3B:00.0" as NVML spells it) from sysfs; nothing when
// the kernel does not know it (-1) or the device is not there.
std::optional<int> numaNodeOfPciDevice(const std::string &busId, const std::string &sysRoot = {});

struct Pinning {
    int node = 0;
    std::string nodeCpus;    // the node's CPU list from sysfs, "0-15"
    std::string allowedCpus; // /proc/self/status Cpus_allowed_list after pinning
};

// Pins the calling thread (at start-up: the process) to the CPUs of `node`, or of the CPU rank's
// node when `node` is nothing. `sysRoot` prefixes /sys (tests). Errors name
// ACCELERATE_CPU_AFFINITY and the reason (no NUMA information, the kernel refused the mask).
Result<Pinning> pinToNumaNode(int localRank, int localWorldSize, std::optional<int> node,
                              const std::string &sysRoot = {});

// Cpus_allowed_list of /proc/self/status ("0-3"), empty when unreadable.
std::string allowedCpuList();

} // namespace accel::worker
