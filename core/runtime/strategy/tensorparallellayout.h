// Checkpoints of a model split by tensor parallelism (core/inference/tensorparallel.h): every
// tensor is saved whole, as one rank without tensor parallelism saves it (docs/finetune.md
// "Checkpoints on the device mesh"), so a checkpoint resumes on any mesh. Saving gathers each split
// parameter and its optimizer state over the tp group; loading keeps this rank's part again.
// The optimizer state of such checkpoints is a sharded folder (core/plan/shardedfolder.h) whose
// tensors are whole, in one piece each: optimizer_<i>/index.json and rank0.safetensors, which every
// strategy reads (the sharding engine re-chunks it for its ranks, DDP and one process take it whole).
// Implemented in shardedcheckpoint.cpp. Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/common/result.h"

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace accel::runtime {

using NamedTensors = std::map<std::string, torch::Tensor>;

struct TensorParallelLayout {
    int rank = 0; // in the tp group
    int size = 1;
    // The split parameters by state-dict name: the dimension split in `size` equal parts, rank r's
    // part the r-th.
    std::map<std::string, int64_t> splitDims;
    // The tp group's all-gather along dim 0 (`output` holds size chunks of `input`).
    std::function<void(torch::Tensor &output, const torch::Tensor &input)> allGather;
};

// The split of `model` (every rank, before the Accelerator saves or loads its state); kept, with the
// layout, until set again for the same module. Null: not split.
void setTensorParallelLayout(const torch::nn::Module &model, std::shared_ptr<const TensorParallelLayout> layout);
std::shared_ptr<const TensorParallelLayout> tensorParallelLayout(const torch::nn::Module &model);

// Each tensor named after a split parameter ("<name>" or "<state>/<name>") made whole: a collective
// of the tp group, every member passing the same names.
void gatherWhole(const TensorParallelLayout &layout, NamedTensors &tensors);
// Each tensor named after a split parameter narrowed to this rank's part (a copy).
void keepPart(const TensorParallelLayout &layout, NamedTensors &tensors);

// The model's parameters and buffers by state-dict name, as they are (not copied).
NamedTensors modelTensors(torch::nn::Module &model);
// Copies `tensors` into the model's parameters and buffers by name: each must be there with the
// model's shape (dtypes are converted); `source` names the file in errors.
Result<void> loadModelTensors(torch::nn::Module &model, const NamedTensors &tensors, const std::string &source);

// The state (Adam / AdamW moments, SGD momentum) the optimizer holds for the parameters `names`
// names (their TensorImpl), as "<state>/<name>"; `step` takes Adam's step count.
NamedTensors optimizerTensors(torch::optim::Optimizer &optimizer, const std::map<const void *, std::string> &names,
                              int64_t &step);
// The reverse: the state of every parameter `names` names and `tensors` holds.
void setOptimizerTensors(torch::optim::Optimizer &optimizer, const std::map<const void *, std::string> &names,
                         const NamedTensors &tensors, int64_t step);

// A sharded folder holding every tensor whole (one piece in rank0.safetensors) and its index.
Result<void> writeWholeFolder(const std::string &folder, const std::string &kind, const NamedTensors &tensors,
                              int64_t step);
// Any sharded folder's tensors joined whole (floating point).
Result<NamedTensors> readShardedFolder(const std::string &folder);

} // namespace accel::runtime
