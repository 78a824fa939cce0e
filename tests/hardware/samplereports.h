// Hand-written host reports shared by the recommender, JSON and CLI tests.
#pragma once

#include "core/hardware/hardwarereport.h"

#include <string>

namespace accel::test {

inline hardware::HardwareReport cpuHost(int sockets, int coresPerSocket, bool bf16, int numaNodes)
{
    hardware::HardwareReport report;
    report.system.hostname = "cpu-host";
    report.cpu.model = "Test CPU";
    report.cpu.sockets = sockets;
    report.cpu.physicalCores = sockets * coresPerSocket;
    report.cpu.logicalCpus = report.cpu.availableCpus = 2 * report.cpu.physicalCores;
    report.cpu.flags = {"avx", "avx2", "fma", "avx512f"};
    if (bf16)
        report.cpu.flags.push_back("avx512_bf16");
    for (int node = 0; node < numaNodes; ++node) {
        hardware::NumaNode numa;
        numa.id = node;
        const int perNode = report.cpu.logicalCpus / numaNodes;
        for (int cpu = node * perNode; cpu < (node + 1) * perNode; ++cpu)
            numa.cpus.push_back(cpu);
        report.numaNodes.push_back(numa);
    }
    report.memory.totalBytes = uint64_t(256) << 30;
    report.gpu.unavailableReason = "NVML not available: libnvidia-ml.so.1: cannot open shared object file";
    return report;
}

// `count` GPUs of one model; `nvlink` fills the topology with NV<links> between every pair,
// otherwise with "SYS".
inline hardware::HardwareReport gpuHost(int count, const std::string &name, int major, int minor,
                                        const std::string &driver, int nvlinks, int cores = 64)
{
    hardware::HardwareReport report = cpuHost(2, cores / 2, false, 2);
    report.system.hostname = "gpu-host";
    report.gpu.unavailableReason.clear();
    report.gpu.source = "nvml";
    report.gpu.driverVersion = driver;
    report.gpu.cudaDriverVersion = "12.2";
    for (int i = 0; i < count; ++i) {
        hardware::GpuInfo gpu;
        gpu.index = i;
        gpu.name = name;
        gpu.uuid = "GPU-test-" + std::to_string(i);
        gpu.pciBusId = "00000000:0" + std::to_string(i) + ":00.0";
        gpu.memoryTotalBytes = uint64_t(80) << 30;
        gpu.memoryFreeBytes = uint64_t(79) << 30;
        gpu.memoryUsedBytes = uint64_t(1) << 30;
        gpu.computeMajor = major;
        gpu.computeMinor = minor;
        gpu.pcieGeneration = 4;
        gpu.pcieWidth = 16;
        gpu.nvlinkActiveLinks = nvlinks;
        report.gpu.gpus.push_back(gpu);
        report.gpu.topology.devices.push_back("GPU" + std::to_string(i));
        report.gpu.topology.cpuAffinity.push_back(i < count / 2 ? "0-31" : "32-63");
        report.gpu.topology.numaAffinity.push_back(i < count / 2 ? "0" : "1");
    }
    for (int i = 0; i < count; ++i) {
        std::vector<std::string> row;
        for (int j = 0; j < count; ++j)
            row.push_back(i == j ? "X" : nvlinks > 0 ? "NV" + std::to_string(nvlinks) : "SYS");
        report.gpu.topology.links.push_back(row);
    }
    return report;
}

} // namespace accel::test
