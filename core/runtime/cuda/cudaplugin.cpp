// libaccel_runtime_cuda.so: the runtime's CUDA calls (core/runtime/cudaplugin.h). The only file of
// the runtime that links libtorch_cuda, libc10_cuda and the CUDA runtime.
#include "core/runtime/cudaplugin.h"

#include <ATen/native/cuda/Resize.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace {

c10::intrusive_ptr<c10d::Backend> ncclGroup(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                                            std::chrono::milliseconds timeout)
{
    // GPUs talk through NCCL, as Accelerate's default backend for CUDA.
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
}

void setDevice(int index)
{
    c10::cuda::set_device(c10::DeviceIndex(index));
}

double allocatedBytes(int index)
{
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::DeviceIndex(index));
    return double(stats.allocated_bytes[0].current); // 0: the aggregate over pool kinds
}

bool computeCapability(int index, int *major, int *minor)
{
    return cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, index) == cudaSuccess &&
           cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, index) == cudaSuccess;
}

std::string ncclFlightRecorder()
{
    return c10d::dump_nccl_trace_json(/*includeCollectives=*/true, /*onlyActive=*/false);
}

void resizeStorageBytes(c10::StorageImpl *storage, size_t bytes)
{
    at::native::resize_bytes_cuda(storage, bytes);
}

} // namespace

extern "C" __attribute__((visibility("default"))) const accel::runtime::CudaPlugin *accel_runtime_cuda_plugin()
{
    static const accel::runtime::CudaPlugin plugin = [] {
        accel::runtime::CudaPlugin p;
        p.ncclGroup = &ncclGroup;
        p.setDevice = &setDevice;
        p.allocatedBytes = &allocatedBytes;
        p.computeCapability = &computeCapability;
        p.ncclFlightRecorder = &ncclFlightRecorder;
        p.resizeStorageBytes = &resizeStorageBytes;
        return p;
    }();
    return &plugin;
}
