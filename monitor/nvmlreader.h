// NvmlReader: per-GPU utilisation and memory, and GPU memory per process, through NVML when the
// NVIDIA driver's libnvidia-ml is installed (core/hardware/nvmlapi.h loads it at run time, so the
// build needs no CUDA). Without it every call returns nothing and the sampler writes no GPU fields.
#pragma once

#include <QtGlobal>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace accel::hardware::nvml {
class Library;
}

namespace accel::monitor {

struct GpuReading {
    int index = 0;
    double utilPercent = -1; // -1: not available
    double memUsedBytes = -1;
    double memTotalBytes = -1;
};

class NvmlReader {
public:
    // `library`: empty for the driver's libnvidia-ml.
    explicit NvmlReader(const std::string &library = {});
    ~NvmlReader();
    NvmlReader(const NvmlReader &) = delete;
    NvmlReader &operator=(const NvmlReader &) = delete;

    bool isAvailable() const { return m_nvml != nullptr; }
    // One reading per GPU; `processMemory` gets the GPU memory of each pid (summed over GPUs).
    std::vector<GpuReading> read(std::map<qint64, double> &processMemory);

private:
    std::unique_ptr<hardware::nvml::Library> m_nvml;
};

} // namespace accel::monitor
