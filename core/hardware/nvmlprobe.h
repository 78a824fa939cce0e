// NVIDIA GPUs through NVML loaded at run time (dlopen), so the programs need no CUDA at build
// time and run unchanged on machines without a driver (core/hardware/nvmlapi.h loads it).
#pragma once

#include "core/hardware/hardwarereport.h"
#include "core/hardware/nvmlapi.h"

#include <string>

namespace accel::hardware {

// Fills driver/CUDA versions, GPUs (name, UUID, PCI bus id, memory, compute capability, PCIe
// link, active NVLinks, compute processes) and the topology matrix. Never fails: when the
// library cannot be loaded or initialised, the section has no GPUs and unavailableReason says
// why ("NVML not available: <dlerror>").
GpuSection probeNvml(const std::string &library = nvml::kLibrary);

} // namespace accel::hardware
