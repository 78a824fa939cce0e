// Bridging bigmodel's mapped tensors (safetensors, offload folders) into libtorch. Includes
// libtorch: only torch .cpp files include it.
#pragma once

#include "core/bigmodel/dtype.h"
#include "core/common/result.h"

#include <ATen/ATen.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace accel::inference {

Result<at::ScalarType> scalarTypeFor(bigmodel::DType dtype);
Result<bigmodel::DType> dtypeFor(at::ScalarType type);
// "float32"/"fp32", "bfloat16"/"bf16", "float16"/"fp16"/"half".
Result<at::ScalarType> parseComputeDType(const std::string &name);

// A CPU tensor viewing `data` in place: the deleter holds `keepAlive` (the file mapping), so
// the bytes stay valid for as long as any tensor shares them. The tensor must be treated as
// read-only (the mapping is). Copies only when the bytes are not aligned for the element type.
// `what` names the tensor in errors.
Result<at::Tensor> viewBytes(const std::byte *data, uint64_t size, bigmodel::DType dtype,
                             const std::vector<int64_t> &shape, std::shared_ptr<const void> keepAlive,
                             const std::string &what);

// The tensor on `device` in `dtype` (floating tensors only are cast): the view itself when both
// already match, else one converted copy.
at::Tensor placeTensor(const at::Tensor &view, const at::Device &device, std::optional<at::ScalarType> dtype);

// A device-map device ("cpu", "0", "cuda:1", "mps") as a torch device; "disk" is not a device.
Result<at::Device> parseDevice(const std::string &name);

} // namespace accel::inference
