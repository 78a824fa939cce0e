#include "monitor/nvmlreader.h"

#include <climits>
#include <dlfcn.h>

namespace accel::monitor {

namespace {

// The few NVML declarations the sampler uses (the C API of libnvidia-ml, stable since driver 319).
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque *;
struct NvmlUtilization {
    unsigned int gpu;
    unsigned int memory;
};
struct NvmlMemory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};
struct NvmlProcessInfoV1 {
    unsigned int pid;
    unsigned long long usedGpuMemory;
};
constexpr NvmlReturn kSuccess = 0;

template <typename Function>
Function symbol(void *library, const char *name)
{
    return reinterpret_cast<Function>(::dlsym(library, name));
}

} // namespace

struct NvmlReader::Api {
    NvmlReturn (*shutdown)() = nullptr;
    NvmlReturn (*deviceCount)(unsigned int *) = nullptr;
    NvmlReturn (*handleByIndex)(unsigned int, NvmlDevice *) = nullptr;
    NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization *) = nullptr;
    NvmlReturn (*memory)(NvmlDevice, NvmlMemory *) = nullptr;
    NvmlReturn (*processes)(NvmlDevice, unsigned int *, NvmlProcessInfoV1 *) = nullptr;
};

NvmlReader::NvmlReader()
{
    void *library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library)
        return;
    auto init = symbol<NvmlReturn (*)()>(library, "nvmlInit_v2");
    auto *api = new Api;
    api->shutdown = symbol<decltype(api->shutdown)>(library, "nvmlShutdown");
    api->deviceCount = symbol<decltype(api->deviceCount)>(library, "nvmlDeviceGetCount_v2");
    api->handleByIndex = symbol<decltype(api->handleByIndex)>(library, "nvmlDeviceGetHandleByIndex_v2");
    api->utilization = symbol<decltype(api->utilization)>(library, "nvmlDeviceGetUtilizationRates");
    api->memory = symbol<decltype(api->memory)>(library, "nvmlDeviceGetMemoryInfo");
    api->processes = symbol<decltype(api->processes)>(library, "nvmlDeviceGetComputeRunningProcesses");
    if (!init || !api->shutdown || !api->deviceCount || !api->handleByIndex || init() != kSuccess) {
        delete api;
        ::dlclose(library);
        return;
    }
    m_library = library;
    m_api = api;
}

NvmlReader::~NvmlReader()
{
    if (!m_library)
        return;
    m_api->shutdown();
    delete m_api;
    ::dlclose(m_library);
}

std::vector<GpuReading> NvmlReader::read(std::map<qint64, double> &processMemory)
{
    std::vector<GpuReading> readings;
    if (!m_library)
        return readings;
    unsigned int count = 0;
    if (m_api->deviceCount(&count) != kSuccess)
        return readings;
    for (unsigned int index = 0; index < count; ++index) {
        NvmlDevice device = nullptr;
        if (m_api->handleByIndex(index, &device) != kSuccess)
            continue;
        GpuReading reading;
        reading.index = static_cast<int>(index);
        NvmlUtilization utilization{};
        if (m_api->utilization && m_api->utilization(device, &utilization) == kSuccess)
            reading.utilPercent = utilization.gpu;
        NvmlMemory memory{};
        if (m_api->memory && m_api->memory(device, &memory) == kSuccess) {
            reading.memUsedBytes = static_cast<double>(memory.used);
            reading.memTotalBytes = static_cast<double>(memory.total);
        }
        if (m_api->processes) {
            NvmlProcessInfoV1 infos[64];
            unsigned int infoCount = 64;
            if (m_api->processes(device, &infoCount, infos) == kSuccess) {
                for (unsigned int i = 0; i < infoCount && i < 64; ++i) {
                    if (infos[i].usedGpuMemory != ULLONG_MAX) // "not available" (e.g. under some hypervisors)
                        processMemory[infos[i].pid] += static_cast<double>(infos[i].usedGpuMemory);
                }
            }
        }
        readings.push_back(reading);
    }
    return readings;
}

} // namespace accel::monitor
