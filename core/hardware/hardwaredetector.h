// Builds the HardwareReport of this machine. Every section is best effort: what cannot be read
// is left empty (GPUs and software say why), so detection itself never fails.
#pragma once

#include "core/common/programs.h"
#include "core/hardware/hardwarereport.h"
#include "core/hardware/nvmlapi.h"

#include <string>
#include <vector>

namespace accel::hardware {

struct DetectOptions {
    // Folders whose free space is reported; empty = the current folder and the Hugging Face
    // cache ($HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface).
    std::vector<std::string> diskPaths;
    // Prefix for /proc, /sys and /etc reads (tests point it at a generated tree); "" = live system.
    std::string root;
    bool probeGpus = true;
    std::string nvmlLibrary = nvml::kLibrary;
    bool probeWorker = true;
    std::string workerPath; // "" = accel-worker beside the running program
    int workerTimeoutMs = 10000;
    bool probePython = true;
    std::string python = defaultPython;
    int pythonTimeoutMs = 15000;
};

HardwareReport detectHardware(const DetectOptions &options = {});

// The sections, usable one by one (the studio refreshes memory and GPUs more often).
SystemInfo detectSystem(const std::string &root = {});
CpuInfo detectCpu(const std::string &root = {});
std::vector<NumaNode> detectNumaNodes(const std::string &root = {});
MemoryInfo detectMemory(const std::string &root = {});
std::vector<DiskInfo> detectDisks(const std::vector<std::string> &paths);
std::vector<NetworkInterface> detectNetwork(const std::string &root = {});

// The default disk paths described in DetectOptions::diskPaths.
std::vector<std::string> defaultDiskPaths();

// NVIDIA GPUs the driver lists under /proc/driver/nvidia/gpus (0 without the driver): what
// `accelerate config default` counts, without loading NVML.
int driverGpuCount();

} // namespace accel::hardware
