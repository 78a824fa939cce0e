// Tensors in and out of safetensors files (through core/bigmodel's reader and writer): model
// state dicts by parameter name, and plain named tensors (recipe inputs, test fixtures).
// Implemented in tensorio.cpp.
#pragma once

#include "core/common/result.h"

#include <functional>
#include <map>
#include <string>

namespace at {
class Tensor;
}
namespace torch::nn {
class Module;
}

namespace accel::runtime {

// Parameters and buffers by their state-dict names ("layers.0.weight"), written atomically.
Result<void> saveModelSafetensors(torch::nn::Module &model, const std::string &path);
// Copies every parameter and buffer from the file; with `strict` a missing tensor is an error.
// Shapes must match; dtypes are converted.
Result<void> loadModelSafetensors(torch::nn::Module &model, const std::string &path, bool strict = true);
// The tensor of a name, or an undefined tensor when the source lacks it.
using TensorSource = std::function<Result<at::Tensor>(const std::string &name)>;
// Copies into every parameter and buffer the tensor `find` gives for its name: the one rule of the
// loaders above and the sharded checkpoints' (a missing tensor is an error naming it and `source`
// unless !strict; shapes must match; dtypes are converted).
Result<void> copyIntoModel(torch::nn::Module &model, const TensorSource &find, const std::string &source,
                           bool strict = true);

Result<void> saveTensors(const std::string &path, const std::map<std::string, at::Tensor> &tensors);
Result<std::map<std::string, at::Tensor>> loadTensors(const std::string &path);

} // namespace accel::runtime
