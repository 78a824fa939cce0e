#include "core/hardware/nvmlapi.h"

#include <dlfcn.h>

namespace accel::hardware::nvml {

namespace {

template <typename F>
void resolve(void *handle, F &function, const char *name)
{
    function = reinterpret_cast<F>(::dlsym(handle, name));
}

} // namespace

std::unique_ptr<Library> Library::open(const std::string &path, std::string *why)
{
    std::unique_ptr<Library> library(new Library);
    library->m_handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library->m_handle) {
        const char *error = ::dlerror();
        *why = std::string("NVML not available: ") + (error ? error : path + ": cannot be loaded");
        return nullptr;
    }
    void *handle = library->m_handle;
    Return (*init)() = nullptr;
    resolve(handle, init, "nvmlInit_v2");
    resolve(handle, library->shutdown, "nvmlShutdown");
    resolve(handle, library->errorString, "nvmlErrorString");
    resolve(handle, library->getCount, "nvmlDeviceGetCount_v2");
    resolve(handle, library->getHandleByIndex, "nvmlDeviceGetHandleByIndex_v2");
    resolve(handle, library->getName, "nvmlDeviceGetName");
    resolve(handle, library->getUuid, "nvmlDeviceGetUUID");
    resolve(handle, library->getMemoryInfo, "nvmlDeviceGetMemoryInfo");
    resolve(handle, library->getUtilization, "nvmlDeviceGetUtilizationRates");
    resolve(handle, library->getComputeCapability, "nvmlDeviceGetCudaComputeCapability");
    resolve(handle, library->getDriverVersion, "nvmlSystemGetDriverVersion");
    resolve(handle, library->getCudaDriverVersion, "nvmlSystemGetCudaDriverVersion");
    resolve(handle, library->getPcieGeneration, "nvmlDeviceGetCurrPcieLinkGeneration");
    resolve(handle, library->getPcieWidth, "nvmlDeviceGetCurrPcieLinkWidth");
    resolve(handle, library->getTopologyCommonAncestor, "nvmlDeviceGetTopologyCommonAncestor");
    resolve(handle, library->getNvLinkState, "nvmlDeviceGetNvLinkState");
    resolve(handle, library->getNvLinkRemotePciInfo, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    resolve(handle, library->getPciInfo, "nvmlDeviceGetPciInfo_v3");
    resolve(handle, library->getProcessesV3, "nvmlDeviceGetComputeRunningProcesses_v3");
    resolve(handle, library->getProcessesV1, "nvmlDeviceGetComputeRunningProcesses");
    if (!init || !library->getCount || !library->getHandleByIndex) {
        *why = "NVML not available: " + path +
               " lacks nvmlInit_v2/nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2 (driver too old)";
        return nullptr;
    }
    if (const Return result = init(); result != kSuccess) {
        *why = "NVML not available: nvmlInit_v2 failed: " + library->describe(result);
        return nullptr;
    }
    library->m_initialised = true;
    return library;
}

Library::~Library()
{
    if (m_initialised && shutdown)
        shutdown();
    if (m_handle)
        ::dlclose(m_handle);
}

std::string Library::describe(Return code) const
{
    if (errorString) {
        if (const char *text = errorString(code))
            return text;
    }
    return "NVML error " + std::to_string(code);
}

} // namespace accel::hardware::nvml
