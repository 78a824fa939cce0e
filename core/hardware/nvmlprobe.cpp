#include "core/hardware/nvmlprobe.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>

namespace accel::hardware {

namespace {

// --- The subset of NVML's documented C API that the probe uses ---------------------------------
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDeviceOpaque *;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;
constexpr unsigned NVML_BUFFER_SIZE = 96; // >= NVML_DEVICE_NAME_V2_BUFFER_SIZE, UUID and version sizes

struct nvmlMemory_t {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};

struct nvmlPciInfo_t {
    char busIdLegacy[16];
    unsigned domain;
    unsigned bus;
    unsigned device;
    unsigned pciDeviceId;
    unsigned pciSubSystemId;
    char busId[32];
};

struct nvmlProcessInfo_v1_t {
    unsigned pid;
    unsigned long long usedGpuMemory;
};

struct nvmlProcessInfo_v2_t {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId;
    unsigned computeInstanceId;
};

// nvmlGpuTopologyLevel_t values and their `nvidia-smi topo -m` names.
const char *topologyName(int level)
{
    switch (level) {
    case 0:
        return "X"; // NVML_TOPOLOGY_INTERNAL
    case 10:
        return "PIX"; // NVML_TOPOLOGY_SINGLE
    case 20:
        return "PXB"; // NVML_TOPOLOGY_MULTIPLE
    case 30:
        return "PHB"; // NVML_TOPOLOGY_HOSTBRIDGE
    case 40:
        return "NODE"; // NVML_TOPOLOGY_NODE
    case 50:
        return "SYS"; // NVML_TOPOLOGY_SYSTEM
    default:
        return "?";
    }
}

struct NvmlApi {
    void *handle = nullptr;
    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    const char *(*errorString)(nvmlReturn_t) = nullptr;
    nvmlReturn_t (*getCount)(unsigned *) = nullptr;
    nvmlReturn_t (*getHandleByIndex)(unsigned, nvmlDevice_t *) = nullptr;
    nvmlReturn_t (*getName)(nvmlDevice_t, char *, unsigned) = nullptr;
    nvmlReturn_t (*getUuid)(nvmlDevice_t, char *, unsigned) = nullptr;
    nvmlReturn_t (*getMemoryInfo)(nvmlDevice_t, nvmlMemory_t *) = nullptr;
    nvmlReturn_t (*getComputeCapability)(nvmlDevice_t, int *, int *) = nullptr;
    nvmlReturn_t (*getDriverVersion)(char *, unsigned) = nullptr;
    nvmlReturn_t (*getCudaDriverVersion)(int *) = nullptr;
    nvmlReturn_t (*getPcieGeneration)(nvmlDevice_t, unsigned *) = nullptr;
    nvmlReturn_t (*getPcieWidth)(nvmlDevice_t, unsigned *) = nullptr;
    nvmlReturn_t (*getTopologyCommonAncestor)(nvmlDevice_t, nvmlDevice_t, int *) = nullptr;
    nvmlReturn_t (*getNvLinkState)(nvmlDevice_t, unsigned, int *) = nullptr;
    nvmlReturn_t (*getNvLinkRemotePciInfo)(nvmlDevice_t, unsigned, nvmlPciInfo_t *) = nullptr;
    nvmlReturn_t (*getPciInfo)(nvmlDevice_t, nvmlPciInfo_t *) = nullptr;
    nvmlReturn_t (*getProcessesV3)(nvmlDevice_t, unsigned *, nvmlProcessInfo_v2_t *) = nullptr;
    nvmlReturn_t (*getProcessesV1)(nvmlDevice_t, unsigned *, nvmlProcessInfo_v1_t *) = nullptr;

    ~NvmlApi()
    {
        if (handle)
            dlclose(handle);
    }

    template <typename F>
    void resolve(F &function, const char *name)
    {
        function = reinterpret_cast<F>(dlsym(handle, name));
    }

    std::string describe(nvmlReturn_t code) const
    {
        if (errorString) {
            if (const char *text = errorString(code))
                return text;
        }
        return "NVML error " + std::to_string(code);
    }
};

// PCI info with room to spare, so that a larger structure in a future driver cannot overrun.
struct PaddedPciInfo {
    nvmlPciInfo_t info;
    char spare[64];
};

std::string normalizedBusId(const char *busId)
{
    // NVML reports "00000000:3B:00.0"; compare on the last 12 characters, upper-case.
    std::string id(busId);
    if (id.size() > 12)
        id = id.substr(id.size() - 12);
    for (char &c : id)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return id;
}

void readProcesses(const NvmlApi &api, nvmlDevice_t device, GpuInfo &gpu)
{
    unsigned count = 64;
    if (api.getProcessesV3) {
        nvmlProcessInfo_v2_t list[64];
        if (api.getProcessesV3(device, &count, list) == NVML_SUCCESS) {
            for (unsigned i = 0; i < count && i < 64; ++i)
                gpu.processes.push_back({list[i].pid, list[i].usedGpuMemory});
        }
    } else if (api.getProcessesV1) {
        nvmlProcessInfo_v1_t list[64];
        if (api.getProcessesV1(device, &count, list) == NVML_SUCCESS) {
            for (unsigned i = 0; i < count && i < 64; ++i)
                gpu.processes.push_back({list[i].pid, list[i].usedGpuMemory});
        }
    }
}

} // namespace

GpuSection probeNvml(const std::string &library)
{
    GpuSection section;
    NvmlApi api;
    api.handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!api.handle) {
        const char *why = dlerror();
        section.unavailableReason = std::string("NVML not available: ") + (why ? why : library + ": cannot be loaded");
        return section;
    }
    api.resolve(api.init, "nvmlInit_v2");
    api.resolve(api.shutdown, "nvmlShutdown");
    api.resolve(api.errorString, "nvmlErrorString");
    api.resolve(api.getCount, "nvmlDeviceGetCount_v2");
    api.resolve(api.getHandleByIndex, "nvmlDeviceGetHandleByIndex_v2");
    api.resolve(api.getName, "nvmlDeviceGetName");
    api.resolve(api.getUuid, "nvmlDeviceGetUUID");
    api.resolve(api.getMemoryInfo, "nvmlDeviceGetMemoryInfo");
    api.resolve(api.getComputeCapability, "nvmlDeviceGetCudaComputeCapability");
    api.resolve(api.getDriverVersion, "nvmlSystemGetDriverVersion");
    api.resolve(api.getCudaDriverVersion, "nvmlSystemGetCudaDriverVersion");
    api.resolve(api.getPcieGeneration, "nvmlDeviceGetCurrPcieLinkGeneration");
    api.resolve(api.getPcieWidth, "nvmlDeviceGetCurrPcieLinkWidth");
    api.resolve(api.getTopologyCommonAncestor, "nvmlDeviceGetTopologyCommonAncestor");
    api.resolve(api.getNvLinkState, "nvmlDeviceGetNvLinkState");
    api.resolve(api.getNvLinkRemotePciInfo, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    api.resolve(api.getPciInfo, "nvmlDeviceGetPciInfo_v3");
    api.resolve(api.getProcessesV3, "nvmlDeviceGetComputeRunningProcesses_v3");
    api.resolve(api.getProcessesV1, "nvmlDeviceGetComputeRunningProcesses");
    if (!api.init || !api.getCount || !api.getHandleByIndex) {
        section.unavailableReason = "NVML not available: " + library +
                                    " lacks nvmlInit_v2/nvmlDeviceGetCount_v2/"
                                    "nvmlDeviceGetHandleByIndex_v2 (driver too old)";
        return section;
    }
    const nvmlReturn_t initResult = api.init();
    if (initResult != NVML_SUCCESS) {
        section.unavailableReason = "NVML not available: nvmlInit_v2 failed: " + api.describe(initResult);
        return section;
    }
    section.source = "nvml";
    char buffer[NVML_BUFFER_SIZE] = {};
    if (api.getDriverVersion && api.getDriverVersion(buffer, sizeof buffer) == NVML_SUCCESS)
        section.driverVersion = buffer;
    int cudaVersion = 0;
    if (api.getCudaDriverVersion && api.getCudaDriverVersion(&cudaVersion) == NVML_SUCCESS && cudaVersion > 0)
        section.cudaDriverVersion =
            std::to_string(cudaVersion / 1000) + "." + std::to_string((cudaVersion % 1000) / 10);

    unsigned count = 0;
    const nvmlReturn_t countResult = api.getCount(&count);
    if (countResult != NVML_SUCCESS) {
        section.unavailableReason = "nvmlDeviceGetCount_v2 failed: " + api.describe(countResult);
        count = 0;
    }
    std::vector<nvmlDevice_t> devices;
    std::map<std::string, size_t> indexByBusId;
    for (unsigned i = 0; i < count; ++i) {
        nvmlDevice_t device = nullptr;
        if (api.getHandleByIndex(i, &device) != NVML_SUCCESS)
            continue;
        GpuInfo gpu;
        gpu.index = static_cast<int>(i);
        std::memset(buffer, 0, sizeof buffer);
        if (api.getName && api.getName(device, buffer, sizeof buffer) == NVML_SUCCESS)
            gpu.name = buffer;
        std::memset(buffer, 0, sizeof buffer);
        if (api.getUuid && api.getUuid(device, buffer, sizeof buffer) == NVML_SUCCESS)
            gpu.uuid = buffer;
        PaddedPciInfo pci{};
        if (api.getPciInfo && api.getPciInfo(device, &pci.info) == NVML_SUCCESS) {
            pci.info.busId[sizeof pci.info.busId - 1] = '\0';
            gpu.pciBusId = pci.info.busId;
            indexByBusId[normalizedBusId(pci.info.busId)] = devices.size();
        }
        nvmlMemory_t memory{};
        if (api.getMemoryInfo && api.getMemoryInfo(device, &memory) == NVML_SUCCESS) {
            gpu.memoryTotalBytes = memory.total;
            gpu.memoryUsedBytes = memory.used;
            gpu.memoryFreeBytes = memory.free;
        }
        int major = -1;
        int minor = -1;
        if (api.getComputeCapability && api.getComputeCapability(device, &major, &minor) == NVML_SUCCESS) {
            gpu.computeMajor = major;
            gpu.computeMinor = minor;
        }
        unsigned value = 0;
        if (api.getPcieGeneration && api.getPcieGeneration(device, &value) == NVML_SUCCESS)
            gpu.pcieGeneration = static_cast<int>(value);
        if (api.getPcieWidth && api.getPcieWidth(device, &value) == NVML_SUCCESS)
            gpu.pcieWidth = static_cast<int>(value);
        if (api.getNvLinkState) {
            for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
                int active = 0;
                if (api.getNvLinkState(device, link, &active) == NVML_SUCCESS && active)
                    ++gpu.nvlinkActiveLinks;
            }
        }
        readProcesses(api, device, gpu);
        devices.push_back(device);
        section.gpus.push_back(std::move(gpu));
    }

    // Topology: NVLink counts between pairs where the remote end is known, else the PCIe level.
    const size_t n = devices.size();
    if (n > 0) {
        GpuTopology &topology = section.topology;
        std::vector<std::vector<int>> nvlinks(n, std::vector<int>(n, 0));
        // Links whose far end is not one of our GPUs lead to an NVSwitch: every pair of GPUs
        // with switch links talks over NVLink (as `nvidia-smi topo -m` shows on HGX boards).
        std::vector<int> switchLinks(n, 0);
        if (api.getNvLinkState && api.getNvLinkRemotePciInfo) {
            for (size_t i = 0; i < n; ++i) {
                for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
                    int active = 0;
                    if (api.getNvLinkState(devices[i], link, &active) != NVML_SUCCESS || !active)
                        continue;
                    PaddedPciInfo remote{};
                    if (api.getNvLinkRemotePciInfo(devices[i], link, &remote.info) != NVML_SUCCESS)
                        continue;
                    remote.info.busId[sizeof remote.info.busId - 1] = '\0';
                    const auto peer = indexByBusId.find(normalizedBusId(remote.info.busId));
                    if (peer != indexByBusId.end())
                        ++nvlinks[i][peer->second];
                    else
                        ++switchLinks[i];
                }
            }
        }
        for (size_t i = 0; i < n; ++i) {
            topology.devices.push_back("GPU" + std::to_string(section.gpus[i].index));
            topology.cpuAffinity.emplace_back();
            topology.numaAffinity.emplace_back();
            std::vector<std::string> row;
            for (size_t j = 0; j < n; ++j) {
                if (i == j) {
                    row.push_back("X");
                } else if (nvlinks[i][j] > 0) {
                    row.push_back("NV" + std::to_string(nvlinks[i][j]));
                } else if (switchLinks[i] > 0 && switchLinks[j] > 0) {
                    row.push_back("NV" + std::to_string(std::min(switchLinks[i], switchLinks[j])));
                } else {
                    int level = -1;
                    if (api.getTopologyCommonAncestor &&
                        api.getTopologyCommonAncestor(devices[i], devices[j], &level) == NVML_SUCCESS)
                        row.push_back(topologyName(level));
                    else
                        row.push_back("?");
                }
            }
            topology.links.push_back(std::move(row));
        }
    }
    if (api.shutdown)
        api.shutdown();
    return section;
}

} // namespace accel::hardware
