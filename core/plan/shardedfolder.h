// The sharded checkpoint folder without libtorch (docs/sharding.md): `index.json` names, for every
// tensor, its shape and the pieces of its flattened values in the ranks' files
// (`rank<r>.safetensors`, the piece under the tensor's own name, `offset` and `numel` counted in
// elements). Joining the pieces is all `accel merge-weights` needs; it also reads Accelerate's own
// torch.distributed.checkpoint folders (dcpfolder.h).
#pragma once

#include "core/bigmodel/dtype.h"
#include "core/common/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace accel::runtime {

inline constexpr const char *kShardIndexName = "index.json";
inline constexpr const char *kShardFormat = "accel-sharded-v1";
inline constexpr const char *kShardedModelFolder = "pytorch_model_fsdp_0";

// Checkpoint names of prepared model `index`, as Accelerate numbers them: model.safetensors,
// model_1.safetensors, ...; pytorch_model_fsdp_0/, pytorch_model_fsdp_1/, ...
std::string modelFileName(size_t index);
std::string shardedModelFolderName(size_t index);

struct JoinedTensor {
    std::string name;
    bigmodel::DType dtype = bigmodel::DType::F32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};

// Every tensor of a sharded folder, whole, in the index's order. Errors name the file and tensor.
Result<std::vector<JoinedTensor>> joinShardedFolder(const std::string &folder);

// The index's "step" (the optimizer step the folder was saved at): 0 when absent; a whole number
// from 0 to 2^63-1 otherwise, else an error naming the index.
Result<int64_t> shardedFolderStep(const std::string &folder);

struct MergeOptions {
    bool removeCheckpointDir = false; // delete CHECKPOINT_DIR after a successful merge
};

// Every tensor of a checkpoint folder, whatever its format: accel's sharded folder (index.json) or a
// torch.distributed.checkpoint folder (.metadata, core/plan/dcpfolder.h), given itself or as the
// checkpoint folder holding pytorch_model_fsdp_0/. `format` gets the format's name. A DeepSpeed
// checkpoint is refused (Unsupported) naming zero_to_fp32.py; any other folder is an error listing
// what it holds.
Result<std::vector<JoinedTensor>> joinCheckpointFolder(const std::string &checkpointDir, std::string *format);

// accel merge-weights: CHECKPOINT_DIR (joinCheckpointFolder) to OUTPUT_DIR/model.safetensors,
// written atomically (metadata format=pt), named as `accelerate merge-weights` names them. Returns
// the written file; `format` (optional) gets the format that was read.
Result<std::string> mergeWeights(const std::string &checkpointDir, const std::string &outputDir,
                                 const MergeOptions &options = {}, std::string *format = nullptr);

} // namespace accel::runtime
