#include "core/inference/torchtensors.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace accel::inference {

using bigmodel::DType;

Result<at::ScalarType> scalarTypeFor(DType dtype)
{
    switch (dtype) {
    case DType::Bool:
        return at::kBool;
    case DType::U8:
        return at::kByte;
    case DType::I8:
        return at::kChar;
    case DType::I16:
        return at::kShort;
    case DType::I32:
        return at::kInt;
    case DType::I64:
        return at::kLong;
    case DType::F16:
        return at::kHalf;
    case DType::BF16:
        return at::kBFloat16;
    case DType::F32:
        return at::kFloat;
    case DType::F64:
        return at::kDouble;
    case DType::C64:
        return at::kComplexFloat;
    default:
        break;
    }
    return makeError(
        ErrorCode::Unsupported,
        std::string("dtype ") + bigmodel::dtypeCode(dtype) +
            " has no libtorch 1.13 equivalent (supported: BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64, C64)");
}

Result<DType> dtypeFor(at::ScalarType type)
{
    switch (type) {
    case at::kBool:
        return DType::Bool;
    case at::kByte:
        return DType::U8;
    case at::kChar:
        return DType::I8;
    case at::kShort:
        return DType::I16;
    case at::kInt:
        return DType::I32;
    case at::kLong:
        return DType::I64;
    case at::kHalf:
        return DType::F16;
    case at::kBFloat16:
        return DType::BF16;
    case at::kFloat:
        return DType::F32;
    case at::kDouble:
        return DType::F64;
    case at::kComplexFloat:
        return DType::C64;
    default:
        break;
    }
    return makeError(ErrorCode::Unsupported, std::string("torch dtype ") + c10::toString(type) + " cannot be stored");
}

Result<at::ScalarType> parseComputeDType(const std::string &name)
{
    if (name == "float32" || name == "fp32" || name == "float")
        return at::kFloat;
    if (name == "bfloat16" || name == "bf16")
        return at::kBFloat16;
    if (name == "float16" || name == "fp16" || name == "half")
        return at::kHalf;
    return makeError(ErrorCode::InvalidInput, "dtype: expected one of float32, bfloat16, float16; got '" + name + "'");
}

Result<at::Tensor> viewBytes(const std::byte *data, uint64_t size, DType dtype, const std::vector<int64_t> &shape,
                             std::shared_ptr<const void> keepAlive, const std::string &what)
{
    auto type = scalarTypeFor(dtype);
    if (!type)
        return makeError(type.error().code, what + ": " + type.error().message);
    uint64_t elements = 1;
    for (int64_t d : shape)
        elements *= static_cast<uint64_t>(d);
    const uint64_t itemSize = c10::elementSize(*type);
    if (elements * itemSize != size)
        return makeError(ErrorCode::InvalidInput, what + ": " + std::to_string(size) + " bytes do not hold shape of " +
                                                      std::to_string(elements) + " elements of " +
                                                      bigmodel::dtypeCode(dtype));
    const auto options = at::TensorOptions().dtype(*type).device(at::kCPU);
    if (elements == 0)
        return at::empty(shape, options);
    auto *bytes = const_cast<std::byte *>(data); // the mapping is read-only; inference never writes weights
    if (reinterpret_cast<uintptr_t>(bytes) % itemSize != 0) {
        auto copy = at::empty(shape, options);
        std::memcpy(copy.data_ptr(), bytes, size);
        return copy;
    }
    try {
        return at::from_blob(
            bytes, shape, [keep = std::move(keepAlive)](void *) mutable { keep.reset(); }, options);
    } catch (const c10::Error &e) {
        return makeError(ErrorCode::Internal, what + ": " + e.what_without_backtrace());
    }
}

at::Tensor placeTensor(const at::Tensor &view, const at::Device &device, std::optional<at::ScalarType> dtype)
{
    const bool castIt = dtype && at::isFloatingType(view.scalar_type()) && view.scalar_type() != *dtype;
    if (!castIt && view.device() == device)
        return view;
    return view.to(device, castIt ? *dtype : view.scalar_type(), /*non_blocking=*/false, /*copy=*/false);
}

Result<at::Device> parseDevice(const std::string &name)
{
    if (name == "cpu")
        return at::Device(at::kCPU);
    std::string index = name;
    if (name.rfind("cuda:", 0) == 0)
        index = name.substr(5);
    if (!index.empty() && index.find_first_not_of("0123456789") == std::string::npos) {
#if ACCEL_WITH_CUDA
        // c10::DeviceIndex is 8 bits: a larger index would wrap (300 is GPU 44), and std::stoi threw
        // past 2^31 (an abort, uncaught).
        constexpr int kMaxIndex = std::numeric_limits<c10::DeviceIndex>::max();
        if (index.size() > 3 || std::atoi(index.c_str()) > kMaxIndex)
            return makeError(ErrorCode::InvalidInput,
                             "device '" + name + "': GPU indices go from 0 to " + std::to_string(kMaxIndex));
        return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(std::atoi(index.c_str())));
#else
        return makeError(ErrorCode::Unsupported,
                         "device '" + name +
                             "': this build of accel-worker has no CUDA (libtorch CPU); use \"cpu\" or \"disk\"");
#endif
    }
    return makeError(ErrorCode::InvalidInput,
                     "device '" + name + "': expected \"cpu\", \"disk\" or a GPU index such as \"0\"");
}

} // namespace accel::inference
