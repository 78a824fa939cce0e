// NVIDIA GPUs in the host report: each device, the connection matrix between devices, and the
// section that says where the information came from (NVML, nvidia-smi text) or why it is missing.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace accel::hardware {

struct GpuProcess {
    unsigned pid = 0;
    uint64_t usedMemoryBytes = 0;
};

struct GpuInfo {
    int index = 0;
    std::string name;
    std::string uuid;
    std::string pciBusId;
    uint64_t memoryTotalBytes = 0;
    uint64_t memoryUsedBytes = 0;
    uint64_t memoryFreeBytes = 0;
    int computeMajor = -1; // -1 when unknown
    int computeMinor = -1;
    int pcieGeneration = 0; // current link generation, 0 when unknown
    int pcieWidth = 0;      // current link width, 0 when unknown
    int nvlinkActiveLinks = 0;
    std::vector<GpuProcess> processes;

    bool hasComputeCapability() const { return computeMajor >= 0; }
    // Compute capability as 10*major+minor (80 for 8.0), -1 when unknown.
    int computeCapability() const { return computeMajor < 0 ? -1 : computeMajor * 10 + computeMinor; }
};

// The connection matrix between GPUs (and NICs), in `nvidia-smi topo -m` vocabulary:
// "X" (self), "NV<n>" (n NVLinks), "PIX", "PXB", "PHB", "NODE", "SYS".
struct GpuTopology {
    std::vector<std::string> devices;                          // "GPU0", "GPU1", "NIC0", ...
    std::vector<std::vector<std::string>> links;               // links[i][j], square over devices
    std::vector<std::string> cpuAffinity;                      // per device, "" when not given
    std::vector<std::string> numaAffinity;                     // per device, "" when not given
    std::vector<std::pair<std::string, std::string>> nicNames; // ("NIC0", "mlx5_0")

    bool empty() const { return devices.empty(); }
    // The link between two devices by name ("" when either is unknown).
    std::string link(const std::string &a, const std::string &b) const;
};

struct GpuSection {
    std::string source;            // "nvml", "nvidia-smi" or "" when nothing was found
    std::string unavailableReason; // e.g. "NVML not available: libnvidia-ml.so.1: cannot open ..."
    std::string driverVersion;     // "550.54.15"
    std::string cudaDriverVersion; // "12.4"
    std::vector<GpuInfo> gpus;
    GpuTopology topology;
};

} // namespace accel::hardware
