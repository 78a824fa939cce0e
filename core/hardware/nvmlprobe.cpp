#include "core/hardware/nvmlprobe.h"

#include "core/common/text.h"
#include "core/hardware/nvmlapi.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>

namespace accel::hardware {

namespace {

using namespace nvml;

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

// PCI info with room to spare, so that a larger structure in a future driver cannot overrun.
struct PaddedPciInfo {
    PciInfo info;
    char spare[64];
};

std::string normalizedBusId(const char *busId)
{
    // NVML reports "00000000:3B:00.0"; compare on the last 12 characters, upper-case.
    std::string id(busId);
    if (id.size() > 12)
        id = id.substr(id.size() - 12);
    return text::upper(id);
}

void readProcesses(const Library &api, Device device, GpuInfo &gpu)
{
    unsigned count = 64;
    if (api.getProcessesV3) {
        ProcessInfoV2 list[64];
        if (api.getProcessesV3(device, &count, list) == kSuccess) {
            for (unsigned i = 0; i < count && i < 64; ++i)
                gpu.processes.push_back({list[i].pid, list[i].usedGpuMemory});
        }
    } else if (api.getProcessesV1) {
        ProcessInfoV1 list[64];
        if (api.getProcessesV1(device, &count, list) == kSuccess) {
            for (unsigned i = 0; i < count && i < 64; ++i)
                gpu.processes.push_back({list[i].pid, list[i].usedGpuMemory});
        }
    }
}

} // namespace

GpuSection probeNvml(const std::string &library)
{
    GpuSection section;
    std::string why;
    const std::unique_ptr<Library> nvml = Library::open(library, &why);
    if (!nvml) {
        section.unavailableReason = why;
        return section;
    }
    const Library &api = *nvml;
    section.source = "nvml";
    char buffer[kBufferSize] = {};
    if (api.getDriverVersion && api.getDriverVersion(buffer, sizeof buffer) == kSuccess)
        section.driverVersion = buffer;
    int cudaVersion = 0;
    if (api.getCudaDriverVersion && api.getCudaDriverVersion(&cudaVersion) == kSuccess && cudaVersion > 0)
        section.cudaDriverVersion =
            std::to_string(cudaVersion / 1000) + "." + std::to_string((cudaVersion % 1000) / 10);

    unsigned count = 0;
    const Return countResult = api.getCount(&count);
    if (countResult != kSuccess) {
        section.unavailableReason = "nvmlDeviceGetCount_v2 failed: " + api.describe(countResult);
        count = 0;
    }
    std::vector<Device> devices;
    std::map<std::string, size_t> indexByBusId;
    for (unsigned i = 0; i < count; ++i) {
        Device device = nullptr;
        if (api.getHandleByIndex(i, &device) != kSuccess)
            continue;
        GpuInfo gpu;
        gpu.index = static_cast<int>(i);
        std::memset(buffer, 0, sizeof buffer);
        if (api.getName && api.getName(device, buffer, sizeof buffer) == kSuccess)
            gpu.name = buffer;
        std::memset(buffer, 0, sizeof buffer);
        if (api.getUuid && api.getUuid(device, buffer, sizeof buffer) == kSuccess)
            gpu.uuid = buffer;
        PaddedPciInfo pci{};
        if (api.getPciInfo && api.getPciInfo(device, &pci.info) == kSuccess) {
            pci.info.busId[sizeof pci.info.busId - 1] = '\0';
            gpu.pciBusId = pci.info.busId;
            indexByBusId[normalizedBusId(pci.info.busId)] = devices.size();
        }
        Memory memory{};
        if (api.getMemoryInfo && api.getMemoryInfo(device, &memory) == kSuccess) {
            gpu.memoryTotalBytes = memory.total;
            gpu.memoryUsedBytes = memory.used;
            gpu.memoryFreeBytes = memory.free;
        }
        int major = -1;
        int minor = -1;
        if (api.getComputeCapability && api.getComputeCapability(device, &major, &minor) == kSuccess) {
            gpu.computeMajor = major;
            gpu.computeMinor = minor;
        }
        unsigned value = 0;
        if (api.getPcieGeneration && api.getPcieGeneration(device, &value) == kSuccess)
            gpu.pcieGeneration = static_cast<int>(value);
        if (api.getPcieWidth && api.getPcieWidth(device, &value) == kSuccess)
            gpu.pcieWidth = static_cast<int>(value);
        if (api.getNvLinkState) {
            for (unsigned link = 0; link < kNvLinkMaxLinks; ++link) {
                int active = 0;
                if (api.getNvLinkState(device, link, &active) == kSuccess && active)
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
                for (unsigned link = 0; link < kNvLinkMaxLinks; ++link) {
                    int active = 0;
                    if (api.getNvLinkState(devices[i], link, &active) != kSuccess || !active)
                        continue;
                    PaddedPciInfo remote{};
                    if (api.getNvLinkRemotePciInfo(devices[i], link, &remote.info) != kSuccess)
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
                        api.getTopologyCommonAncestor(devices[i], devices[j], &level) == kSuccess)
                        row.push_back(topologyName(level));
                    else
                        row.push_back("?");
                }
            }
            topology.links.push_back(std::move(row));
        }
    }
    return section;
}

} // namespace accel::hardware
