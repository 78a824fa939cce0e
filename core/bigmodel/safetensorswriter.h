// Writing safetensors checkpoints the way the reference writer does: tensors sorted by dtype
// (reference enum order, descending) then name, header padded with spaces to a multiple of 8,
// files written atomically. Sharded checkpoints follow huggingface_hub's splitting rules and
// write model.safetensors.index.json (facts 6.4).
#pragma once

#include "core/bigmodel/dtype.h"
#include "core/common/result.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace accel::bigmodel {

struct TensorToWrite {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    const void *data = nullptr; // C-order little-endian bytes, `size` of them
    uint64_t size = 0;
};

using Metadata = std::map<std::string, std::string>;

// The header JSON (already padded) for the tensors in the order they will be written.
Result<std::string> buildSafetensorsHeader(const std::vector<TensorToWrite> &sorted, const Metadata &metadata);

// Sorts like the reference writer: dtype rank descending, then name.
void sortForWriting(std::vector<TensorToWrite> &tensors);

// Writes one file. Sizes must match shape × dtype; names must be unique.
Result<void> writeSafetensors(const std::string &path, std::vector<TensorToWrite> tensors,
                              const Metadata &metadata = {{"format", "pt"}});

struct ShardedWrite {
    std::vector<std::string> files; // file names inside the folder, in shard order
    std::string indexFile;          // empty when a single file was written
    uint64_t totalSize = 0;
};

// Splits `tensors` (in the given order, like a state dict) into shards of at most maxShardSize
// bytes (a bigger tensor gets a shard of its own), writes `<base>.safetensors` or
// `<base>-0000i-of-0000N.safetensors` plus `<base>.safetensors.index.json`, and deletes stale
// shards of the same base name left by an earlier save.
Result<ShardedWrite> writeShardedSafetensors(const std::string &folder, const std::vector<TensorToWrite> &tensors,
                                             uint64_t maxShardSize, const Metadata &metadata = {{"format", "pt"}},
                                             const std::string &base = "model");

// Splitting only: which tensors (indices into `tensors`) go in which shard.
std::vector<std::vector<size_t>> planShards(const std::vector<TensorToWrite> &tensors, uint64_t maxShardSize);

} // namespace accel::bigmodel
