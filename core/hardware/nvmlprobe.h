// NVIDIA GPUs through NVML loaded at run time (dlopen), so the programs need no CUDA at build
// time and run unchanged on machines without a driver. NVML types and prototypes used here are
// declared in nvmlprobe.cpp from NVIDIA's documented API.
#pragma once

#include "core/hardware/hardwarereport.h"

#include <string>

namespace accel::hardware {

// Fills driver/CUDA versions, GPUs (name, UUID, PCI bus id, memory, compute capability, PCIe
// link, active NVLinks, compute processes) and the topology matrix. Never fails: when the
// library cannot be loaded or initialised, the section has no GPUs and unavailableReason says
// why ("NVML not available: <dlerror>").
GpuSection probeNvml(const std::string &library = "libnvidia-ml.so.1");

} // namespace accel::hardware
