// One tensor saved by torch.save, read without libtorch: the zip archive (libzip) with its
// `<archive>/data.pkl` (read by the restricted unpickler: torch._utils._rebuild_tensor_v2 of one
// storage) and `<archive>/data/<key>` (the storage's bytes, little-endian). torch.distributed.
// checkpoint's FileSystemWriter writes every tensor chunk this way into a `.distcp` file.
#pragma once

#include "core/bigmodel/dtype.h"
#include "core/common/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::runtime {

struct SavedTensor {
    bigmodel::DType dtype = bigmodel::DType::F32;
    std::vector<int64_t> size;
    std::vector<uint8_t> bytes; // the tensor's values in C order (size × dtype)
};

// `blob` is the whole torch.save output; `what` names it in errors ("__0_0.distcp at byte 1577").
// Refused: another global than the tensor's rebuild function and storage classes, a storage that
// is not little-endian, strides that are not C order, a view reaching past its storage.
Result<SavedTensor> readTorchSavedTensor(const std::string &blob, const std::string &what);

// The dtype a pickled global names ("torch.float32"), or nullopt; every such global, for allow lists.
std::optional<bigmodel::DType> dtypeOfTorchGlobal(const std::string &global);
std::vector<std::string> torchDTypeGlobals();

} // namespace accel::runtime
