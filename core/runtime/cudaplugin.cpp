// Loading libaccel_runtime_cuda.so from the folder libaccel_runtime.so lives in.
#include "core/runtime/cudaplugin.h"

#include <dlfcn.h>
#include <filesystem>

namespace accel::runtime {

namespace {

// The plugin's file name; the build and the install put it beside libaccel_runtime.so.
constexpr const char *kCudaPluginFile = "libaccel_runtime_cuda.so";

struct Loaded {
    const CudaPlugin *plugin = nullptr;
    std::string detail;
};

Loaded load()
{
#ifndef ACCEL_WITH_CUDA
    return {nullptr, "accel-worker was built without CUDA"};
#else
    Dl_info self{};
    if (!::dladdr(reinterpret_cast<void *>(&cudaPlugin), &self) || !self.dli_fname)
        return {nullptr, std::string(kCudaPluginFile) + ": cannot tell the runtime's own folder"};
    const std::string path =
        (std::filesystem::path(self.dli_fname).parent_path() / kCudaPluginFile).lexically_normal().string();
    // RTLD_GLOBAL: libtorch_cuda's and NCCL's symbols serve users' plugins and TorchScript modules
    // loaded later, as they did when the runtime linked them.
    void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
        const char *error = ::dlerror();
        return {nullptr, "CUDA support not loaded (install accel-worker-cuda for GPUs): " +
                             std::string(error ? error : path + ": cannot be opened")};
    }
    using Entry = const CudaPlugin *(*)();
    auto entry = reinterpret_cast<Entry>(::dlsym(handle, "accel_runtime_cuda_plugin"));
    const CudaPlugin *plugin = entry ? entry() : nullptr;
    if (!plugin || plugin->abi != ACCEL_CUDA_PLUGIN_ABI)
        return {nullptr, path + ": not the CUDA plugin of this accel-worker (another version?)"};
    return {plugin, path};
#endif
}

const Loaded &loaded()
{
    static const Loaded once = load();
    return once;
}

// At load time, so that libtorch's CUDA hooks are registered before anything asks for a GPU.
[[maybe_unused]] const bool loadedAtStart = (loaded(), true);

} // namespace

const CudaPlugin *cudaPlugin()
{
    return loaded().plugin;
}

const std::string &cudaPluginDetail()
{
    return loaded().detail;
}

} // namespace accel::runtime
