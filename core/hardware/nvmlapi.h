// NVIDIA's NVML, loaded at run time with dlopen so that nothing needs CUDA at build time and every
// program runs unchanged on machines without a driver. One loader and one set of declarations (the
// subset of NVML's documented C API we call) for the hardware probe and the monitor's sampler.
#pragma once

#include <memory>
#include <string>

namespace accel::hardware::nvml {

// The library the driver installs.
inline constexpr const char *kLibrary = "libnvidia-ml.so.1";

using Return = int;
using Device = struct DeviceOpaque *;
inline constexpr Return kSuccess = 0;
inline constexpr unsigned kNvLinkMaxLinks = 18;
inline constexpr unsigned kBufferSize = 96; // >= NVML_DEVICE_NAME_V2_BUFFER_SIZE, UUID and version sizes

struct Memory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};

struct Utilization {
    unsigned gpu;
    unsigned memory;
};

struct PciInfo {
    char busIdLegacy[16];
    unsigned domain;
    unsigned bus;
    unsigned device;
    unsigned pciDeviceId;
    unsigned pciSubSystemId;
    char busId[32];
};

struct ProcessInfoV1 {
    unsigned pid;
    unsigned long long usedGpuMemory;
};

struct ProcessInfoV2 {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId;
    unsigned computeInstanceId;
};

// An opened and initialised NVML: every entry point resolved (null where the driver lacks it).
// Destruction shuts NVML down and closes the library.
class Library {
public:
    // Opens `path`, resolves the entry points and calls nvmlInit_v2. Null with `why` set when the
    // library cannot be loaded, lacks the required entry points or does not initialise.
    static std::unique_ptr<Library> open(const std::string &path, std::string *why);
    ~Library();
    Library(const Library &) = delete;
    Library &operator=(const Library &) = delete;

    // The driver's text for an error code.
    std::string describe(Return code) const;

    Return (*shutdown)() = nullptr;
    const char *(*errorString)(Return) = nullptr;
    Return (*getCount)(unsigned *) = nullptr;                 // required
    Return (*getHandleByIndex)(unsigned, Device *) = nullptr; // required
    Return (*getName)(Device, char *, unsigned) = nullptr;
    Return (*getUuid)(Device, char *, unsigned) = nullptr;
    Return (*getMemoryInfo)(Device, Memory *) = nullptr;
    Return (*getUtilization)(Device, Utilization *) = nullptr;
    Return (*getComputeCapability)(Device, int *, int *) = nullptr;
    Return (*getDriverVersion)(char *, unsigned) = nullptr;
    Return (*getCudaDriverVersion)(int *) = nullptr;
    Return (*getPcieGeneration)(Device, unsigned *) = nullptr;
    Return (*getPcieWidth)(Device, unsigned *) = nullptr;
    Return (*getTopologyCommonAncestor)(Device, Device, int *) = nullptr;
    Return (*getNvLinkState)(Device, unsigned, int *) = nullptr;
    Return (*getNvLinkRemotePciInfo)(Device, unsigned, PciInfo *) = nullptr;
    Return (*getPciInfo)(Device, PciInfo *) = nullptr;
    Return (*getProcessesV3)(Device, unsigned *, ProcessInfoV2 *) = nullptr;
    Return (*getProcessesV1)(Device, unsigned *, ProcessInfoV1 *) = nullptr;

private:
    Library() = default;
    void *m_handle = nullptr;
    bool m_initialised = false;
};

} // namespace accel::hardware::nvml
