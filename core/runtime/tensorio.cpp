// tensorio.h: tensors in and out of safetensors files through core/bigmodel's reader and writer.
#include "core/runtime/tensorio.h"

#include "core/bigmodel/safetensors.h"
#include "core/bigmodel/safetensorswriter.h"

#include <torch/torch.h>

#include <cstring>

namespace accel::runtime {

namespace {

using bigmodel::DType;

Result<DType> toDType(torch::ScalarType type, const std::string &name)
{
    switch (type) {
    case torch::kFloat:
        return DType::F32;
    case torch::kDouble:
        return DType::F64;
    case torch::kHalf:
        return DType::F16;
    case torch::kBFloat16:
        return DType::BF16;
    case torch::kLong:
        return DType::I64;
    case torch::kInt:
        return DType::I32;
    case torch::kShort:
        return DType::I16;
    case torch::kChar:
        return DType::I8;
    case torch::kByte:
        return DType::U8;
    case torch::kBool:
        return DType::Bool;
    default:
        return makeError(ErrorCode::Unsupported, "tensor " + name + ": dtype " + std::string(c10::toString(type)) +
                                                     " cannot be saved to safetensors");
    }
}

Result<torch::ScalarType> toScalarType(DType type, const std::string &name)
{
    switch (type) {
    case DType::F32:
        return torch::kFloat;
    case DType::F64:
        return torch::kDouble;
    case DType::F16:
        return torch::kHalf;
    case DType::BF16:
        return torch::kBFloat16;
    case DType::I64:
        return torch::kLong;
    case DType::I32:
        return torch::kInt;
    case DType::I16:
        return torch::kShort;
    case DType::I8:
        return torch::kChar;
    case DType::U8:
        return torch::kByte;
    case DType::Bool:
        return torch::kBool;
    default:
        return makeError(ErrorCode::Unsupported, std::string("tensor ") + name + ": safetensors dtype " +
                                                     bigmodel::dtypeCode(type) + " has no CPU tensor type here");
    }
}

} // namespace

Result<void> saveModelSafetensors(torch::nn::Module &model, const std::string &path)
{
    std::vector<torch::Tensor> keepAlive;
    std::vector<bigmodel::TensorToWrite> tensors;
    auto add = [&](const std::string &name, const torch::Tensor &value) -> Result<void> {
        auto dtype = toDType(value.scalar_type(), name);
        if (!dtype)
            return tl::unexpected(dtype.error());
        torch::Tensor cpu = value.detach().to(torch::kCPU).contiguous();
        keepAlive.push_back(cpu);
        bigmodel::TensorToWrite t;
        t.name = name;
        t.dtype = *dtype;
        t.shape = cpu.sizes().vec();
        t.data = cpu.data_ptr();
        t.size = uint64_t(cpu.numel()) * uint64_t(cpu.element_size());
        tensors.push_back(std::move(t));
        return {};
    };
    for (const auto &item : model.named_parameters()) {
        if (auto added = add(item.key(), item.value()); !added)
            return added;
    }
    for (const auto &item : model.named_buffers()) {
        if (auto added = add(item.key(), item.value()); !added)
            return added;
    }
    return bigmodel::writeSafetensors(path, std::move(tensors));
}

Result<void> copyIntoModel(torch::nn::Module &model, const TensorSource &find, const std::string &source, bool strict)
{
    torch::NoGradGuard noGrad;
    auto load = [&](const std::string &name, torch::Tensor target) -> Result<void> {
        auto found = find(name);
        if (!found)
            return tl::unexpected(found.error());
        if (!found->defined()) {
            if (!strict)
                return {};
            return makeError(ErrorCode::InvalidInput, "tensor " + name + " is missing from the checkpoint", source);
        }
        if (!found->sizes().equals(target.sizes()))
            return makeError(ErrorCode::InvalidInput,
                             "tensor " + name + ": checkpoint shape " + c10::str(found->sizes()) +
                                 " differs from the model's " + c10::str(target.sizes()),
                             source);
        if (!target.storage().resizable()) {
            // A view of a mapped checkpoint, read-only (a frozen base the model reads in place, e.g.
            // under LoRA): writing into it would fault. It can only already hold the values.
            if (torch::equal(target, found->to(target.scalar_type())))
                return {};
            return makeError(ErrorCode::InvalidInput,
                             "tensor " + name +
                                 ": the checkpoint's values differ from the frozen weights the model reads from "
                                 "its folder (was the base model changed after the checkpoint was written?)",
                             source);
        }
        target.copy_(*found);
        return {};
    };
    for (const auto &item : model.named_parameters()) {
        if (auto loaded = load(item.key(), item.value()); !loaded)
            return loaded;
    }
    for (const auto &item : model.named_buffers()) {
        if (auto loaded = load(item.key(), item.value()); !loaded)
            return loaded;
    }
    return {};
}

Result<void> loadModelSafetensors(torch::nn::Module &model, const std::string &path, bool strict)
{
    auto file = bigmodel::SafetensorsFile::open(path);
    if (!file)
        return tl::unexpected(file.error());
    return copyIntoModel(
        model,
        [&](const std::string &name) -> Result<at::Tensor> {
            const bigmodel::TensorInfo *info = (*file)->find(name);
            if (!info)
                return at::Tensor();
            auto type = toScalarType(info->dtype, name);
            if (!type)
                return tl::unexpected(type.error());
            auto tensor = torch::empty(info->shape, torch::TensorOptions().dtype(*type));
            if (info->byteSize() > 0)
                std::memcpy(tensor.data_ptr(), info->data, info->byteSize());
            return tensor;
        },
        path, strict);
}

Result<void> saveTensors(const std::string &path, const std::map<std::string, at::Tensor> &tensors)
{
    std::vector<torch::Tensor> keepAlive;
    std::vector<bigmodel::TensorToWrite> entries;
    for (const auto &[name, value] : tensors) {
        auto dtype = toDType(value.scalar_type(), name);
        if (!dtype)
            return tl::unexpected(dtype.error());
        torch::Tensor cpu = value.detach().to(torch::kCPU).contiguous();
        keepAlive.push_back(cpu);
        entries.push_back(
            {name, *dtype, cpu.sizes().vec(), cpu.data_ptr(), uint64_t(cpu.numel()) * uint64_t(cpu.element_size())});
    }
    return bigmodel::writeSafetensors(path, std::move(entries));
}

Result<std::map<std::string, at::Tensor>> loadTensors(const std::string &path)
{
    auto file = bigmodel::SafetensorsFile::open(path);
    if (!file)
        return tl::unexpected(file.error());
    std::map<std::string, at::Tensor> tensors;
    for (const auto &info : (*file)->tensors()) {
        auto type = toScalarType(info.dtype, info.name);
        if (!type)
            return makeError(type.error().code, type.error().message, path);
        auto tensor = torch::empty(info.shape, torch::TensorOptions().dtype(*type));
        if (info.byteSize() > 0)
            std::memcpy(tensor.data_ptr(), info.data, info.byteSize());
        tensors[info.name] = tensor;
    }
    return tensors;
}

} // namespace accel::runtime
