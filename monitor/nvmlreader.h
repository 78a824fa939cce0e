// NvmlReader: per-GPU utilisation and memory, and GPU memory per process, through NVML when the
// NVIDIA driver's libnvidia-ml is installed (loaded at run time with dlopen, so the build needs no
// CUDA). Without it every call returns nothing and the sampler writes no GPU fields.
#pragma once

#include <QtGlobal>

#include <map>
#include <vector>

namespace accel::monitor {

struct GpuReading {
    int index = 0;
    double utilPercent = -1; // -1: not available
    double memUsedBytes = -1;
    double memTotalBytes = -1;
};

class NvmlReader {
public:
    NvmlReader();
    ~NvmlReader();
    NvmlReader(const NvmlReader &) = delete;
    NvmlReader &operator=(const NvmlReader &) = delete;

    bool isAvailable() const { return m_library != nullptr; }
    // One reading per GPU; `processMemory` gets the GPU memory of each pid (summed over GPUs).
    std::vector<GpuReading> read(std::map<qint64, double> &processMemory);

private:
    struct Api;
    void *m_library = nullptr;
    Api *m_api = nullptr;
};

} // namespace accel::monitor
