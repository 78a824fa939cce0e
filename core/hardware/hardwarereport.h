// The typed report of one host: system, CPU, NUMA, memory, disks, network, NVIDIA GPUs and their
// topology, the Python/torch software stack and the Accelerate config in use. Plain structs so
// that the studio, `accel env` and remote hosts' JSON (reportjson.h) all share one shape.
#pragma once

#include "core/hardware/gpuinfo.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace accel::hardware {

struct SystemInfo {
    std::string osName;        // PRETTY_NAME from /etc/os-release, e.g. "Debian GNU/Linux 12 (bookworm)"
    std::string osId;          // ID, e.g. "debian"
    std::string osVersionId;   // VERSION_ID, e.g. "12"
    std::string kernelName;    // uname sysname, "Linux"
    std::string kernelRelease; // uname release
    std::string kernelVersion; // uname version
    std::string machine;       // uname machine, "x86_64"
    std::string hostname;
    std::string libcVersion; // glibc version, "2.36"
    std::string platform;    // Python-style platform string: "Linux-6.1.0-x86_64-with-glibc2.36"
};

struct CpuInfo {
    std::string vendor;             // vendor_id, "GenuineIntel"
    std::string model;              // model name
    int sockets = 0;                // distinct physical ids
    int physicalCores = 0;          // distinct (physical id, core id) pairs
    int logicalCpus = 0;            // "processor" entries
    int availableCpus = 0;          // CPUs this process may run on (sched_getaffinity, like `nproc`)
    std::vector<std::string> flags; // the ISA flags that matter for training, in a fixed order

    bool hasFlag(const std::string &flag) const;
};

struct NumaNode {
    int id = 0;
    std::vector<int> cpus;
    uint64_t memoryTotalBytes = 0; // 0 when unknown
};

struct MemoryInfo {
    uint64_t totalBytes = 0;
    uint64_t availableBytes = 0;
    uint64_t swapTotalBytes = 0;
    uint64_t swapFreeBytes = 0;
};

struct DiskInfo {
    std::string path;  // the path that was asked about
    std::string error; // statvfs failure, empty on success
    uint64_t totalBytes = 0;
    uint64_t freeBytes = 0; // available to unprivileged users (f_bavail)
};

struct InterfaceAddress {
    std::string family; // "ipv4" or "ipv6"
    std::string address;
    int prefixLength = 0;
};

struct NetworkInterface {
    std::string name;
    bool up = false;
    bool loopback = false;
    int mtu = 0;       // 0 when unknown
    int speedMbps = 0; // 0 when unknown or virtual
    bool defaultRouteIpv4 = false;
    bool defaultRouteIpv6 = false;
    std::vector<InterfaceAddress> addresses;
};

// What `accel-worker --capabilities --json` reports about the embedded libtorch runtime.
struct WorkerCapabilities {
    bool available = false;
    std::string error; // why it is not available
    std::string path;
    std::string torchVersion;
    bool cudaCompiled = false; // CUDA paths (NCCL process group, placement, autocast) built in
    bool cuda = false;         // a GPU the worker can use
    int gpuCount = 0;
    std::string cudaVersion; // libtorch's CUDA build
    std::string cudnn;
    bool nccl = false;
    std::string ncclVersion; // of the NCCL library libtorch loaded
    bool gloo = false;
    bool mpi = false;
    int openmpThreads = 0;
    std::string blas;
    // libtorch's view of the CPU's matrix features that are present (amx_bf16, avx512_bf16, ...)
    std::vector<std::string> cpuMatrixFeatures;
    // What each mixed_precision value computes its products with on this CPU ("fp8": the measured
    // FP8 GEMM path), in the worker's order.
    std::vector<std::pair<std::string, std::string>> cpuPrecisions;
};

// Python as found on PATH; module versions are "not installed" when the import failed.
struct PythonInfo {
    bool available = false;
    std::string error;
    std::string executable;
    std::string version;
    std::string torchVersion;
    std::string accelerateVersion;
    std::string numpyVersion;
    std::string accelerateExecutable; // `accelerate` on PATH, "" when absent
};

// The Accelerate config file `accel env` shows: the default one or the one passed.
struct ConfigSection {
    std::string path;
    bool passed = false; // --config_file given
    bool found = false;
    std::string error;                                        // read/parse failure
    std::vector<std::pair<std::string, std::string>> entries; // "key" -> "value" as printed
};

struct HardwareReport {
    std::string generatedAt; // ISO-8601 UTC
    std::string accelVersion;
    SystemInfo system;
    CpuInfo cpu;
    std::vector<NumaNode> numaNodes;
    MemoryInfo memory;
    std::vector<DiskInfo> disks;
    std::vector<NetworkInterface> network;
    GpuSection gpu;
    WorkerCapabilities worker;
    PythonInfo python;
    ConfigSection config;
};

} // namespace accel::hardware
