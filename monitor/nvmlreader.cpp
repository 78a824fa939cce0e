#include "monitor/nvmlreader.h"

#include "core/hardware/nvmlapi.h"

#include <climits>

namespace accel::monitor {

using namespace hardware::nvml;

NvmlReader::NvmlReader(const std::string &library)
{
    std::string why;
    m_nvml = Library::open(library.empty() ? std::string(kLibrary) : library, &why);
}

NvmlReader::~NvmlReader() = default;

std::vector<GpuReading> NvmlReader::read(std::map<qint64, double> &processMemory)
{
    std::vector<GpuReading> readings;
    if (!m_nvml)
        return readings;
    const Library &api = *m_nvml;
    unsigned count = 0;
    if (api.getCount(&count) != kSuccess)
        return readings;
    for (unsigned index = 0; index < count; ++index) {
        Device device = nullptr;
        if (api.getHandleByIndex(index, &device) != kSuccess)
            continue;
        GpuReading reading;
        reading.index = static_cast<int>(index);
        Utilization utilization{};
        if (api.getUtilization && api.getUtilization(device, &utilization) == kSuccess)
            reading.utilPercent = utilization.gpu;
        Memory memory{};
        if (api.getMemoryInfo && api.getMemoryInfo(device, &memory) == kSuccess) {
            reading.memUsedBytes = static_cast<double>(memory.used);
            reading.memTotalBytes = static_cast<double>(memory.total);
        }
        if (api.getProcessesV1) {
            ProcessInfoV1 infos[64];
            unsigned infoCount = 64;
            if (api.getProcessesV1(device, &infoCount, infos) == kSuccess) {
                for (unsigned i = 0; i < infoCount && i < 64; ++i) {
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
