// This machine's CPU topology as /proc/cpuinfo states it, and the rule that turns it into the
// threads of each rank. One place for both: the hardware report, the launch merge, the recommender
// and the runtime all count cores here, so two OMP_NUM_THREADS rules cannot disagree.
#pragma once

#include <string_view>

namespace accel {

struct CpuTopology {
    int logicalCpus = 0;   // "processor" entries
    int sockets = 0;       // distinct "physical id"
    int physicalCores = 0; // distinct ("physical id", "core id") pairs
};

// The counts of a /proc/cpuinfo text. Without topology lines (ARM, some VMs) every logical CPU
// counts as a core on one socket.
CpuTopology parseCpuTopology(std::string_view cpuinfo);

// This machine's physical cores from /proc/cpuinfo; when that cannot be read, the logical CPUs
// the C++ runtime reports (at least 1).
int localPhysicalCores();

// Accelerate's rule for a rank's OMP_NUM_THREADS when the user sets none: the host's physical
// cores divided among the ranks on the host, at least 1.
int threadsPerRank(int physicalCores, int ranksOnHost);

} // namespace accel
