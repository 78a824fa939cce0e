// What the runtime takes from CUDA, behind one seam: libaccel_runtime_cuda.so (core/runtime/cuda),
// which links libtorch_cuda, libc10_cuda and NCCL. libaccel_runtime.so links only libtorch's CPU
// libraries and opens the plugin with dlopen when it is loaded itself; where the plugin or the CUDA
// libraries are absent (the accel-worker package without accel-worker-cuda, docs/packaging.md), the
// runtime computes on the CPU with gloo and says why. Loading the plugin is also what loads
// libtorch_cuda.so, whose static initialisers register libtorch's CUDA kernels and hooks: before it
// loads, torch::cuda::is_available() is false. Includes libtorch's c10d headers: only torch .cpp
// files include it.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

#define ACCEL_CUDA_PLUGIN_ABI 3

namespace accel::runtime {

// Filled by the plugin; both sides come from one build (the ABI number guards mixed installs).
struct CudaPlugin {
    int abi = ACCEL_CUDA_PLUGIN_ABI;
    // The NCCL process group of `size` ranks meeting in `store` (throws as c10d does).
    c10::intrusive_ptr<c10d::Backend> (*ncclGroup)(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                                                   std::chrono::milliseconds timeout) = nullptr;
    void (*setDevice)(int index) = nullptr;
    // Bytes the caching allocator holds for tensors on GPU `index` now.
    double (*allocatedBytes)(int index) = nullptr;
    // The compute capability of GPU `index`; false when CUDA cannot tell.
    bool (*computeCapability)(int index, int *major, int *minor) = nullptr;
    // NCCL's flight recorder as JSON (c10d::dump_nccl_trace_json: the process groups' last
    // collectives with their sequence numbers and states; torch keeps TORCH_FR_BUFFER_SIZE or
    // TORCH_NCCL_TRACE_BUFFER_SIZE entries, 2000 by default, 0 turns it off). For the hang autopsy
    // (docs/hang-autopsy.md); callable from any thread.
    std::string (*ncclFlightRecorder)() = nullptr;
    // Resizes a GPU tensor's storage to `bytes` (0 frees its memory; the sharding engine's release
    // and re-gather of ZeRO-3 / FSDP parameters), as CUDA's storage resize does in libtorch.
    void (*resizeStorageBytes)(c10::StorageImpl *storage, size_t bytes) = nullptr;
};

// The plugin, loaded once (at the runtime's start); nullptr when it is absent or did not load.
const CudaPlugin *cudaPlugin();
// Where the plugin was loaded from, or why not (for messages and accel-worker --capabilities).
const std::string &cudaPluginDetail();

} // namespace accel::runtime

// Implemented by the plugin.
extern "C" const accel::runtime::CudaPlugin *accel_runtime_cuda_plugin();
