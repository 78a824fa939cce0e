// Writes a model of the families as a Hugging Face folder, as save_pretrained does: config.json
// (the source folder's, with "dtype" — and "torch_dtype" where the source has it — set to the
// stored dtype), model.safetensors, or model-0000i-of-0000N.safetensors shards of at most
// maxShardSize bytes with model.safetensors.index.json, and the tokenizer and generation files
// of the source folder copied. LoRA branches are left out (their adapter is written apart).
// transformers' AutoModelForCausalLM.from_pretrained and accel generate / infer read the result.
// Includes libtorch.
#pragma once

#include "core/common/result.h"
#include "core/inference/causallm.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::inference {

// transformers' save_pretrained default (max_shard_size "50GB").
constexpr uint64_t kDefaultMaxShardBytes = uint64_t(50) * 1000 * 1000 * 1000;

// The files copied from the source folder when present (tokenizer, generation settings).
const std::vector<std::string> &copiedModelFiles();

struct PretrainedWrite {
    std::vector<std::string> files; // written or copied, names inside the folder
    uint64_t weightBytes = 0;
    std::string dtype; // "float32", "bfloat16", "float16"
};

// `dtype`: the stored dtype; absent = each parameter's own. Every parameter must be resident.
Result<PretrainedWrite> writePretrained(CausalLM &model, const std::string &sourceDir, const std::string &outDir,
                                        std::optional<at::ScalarType> dtype,
                                        uint64_t maxShardSize = kDefaultMaxShardBytes);

} // namespace accel::inference
