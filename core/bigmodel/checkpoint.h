// A checkpoint as Accelerate resolves it (facts 5.6): a folder with model.safetensors or exactly
// one *.safetensors.index.json, a single .safetensors file, or an index file. Shards are mapped
// and validated; the index must agree with the shards' headers.
#pragma once

#include "core/bigmodel/safetensors.h"
#include "core/common/result.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace accel::bigmodel {

class Checkpoint {
public:
    static Result<Checkpoint> open(const std::string &path);

    // A shard by the name the index gives it (relative, checked to have no ".." or absolute part).
    using ShardOpener = std::function<Result<std::shared_ptr<const SafetensorsFile>>(const std::string &name)>;
    // An index's checkpoint from the index's text, each shard through `openShard` (a folder's are
    // mapped files; a Hub model's are known by their headers, hubmodel.h). `indexPath` names it.
    static Result<Checkpoint> fromIndex(const std::string &indexPath, std::string_view indexText,
                                        const ShardOpener &openShard);
    // A single file's checkpoint.
    static Checkpoint fromFile(std::shared_ptr<const SafetensorsFile> file);

    // The folder holding the checkpoint (and usually config.json).
    const std::string &folder() const { return m_folder; }
    const std::string &indexPath() const { return m_indexPath; } // empty for a single file
    bool isSharded() const { return !m_indexPath.empty(); }
    const std::vector<std::shared_ptr<const SafetensorsFile>> &shards() const { return m_shards; }
    const std::map<std::string, std::string> &indexMetadata() const { return m_indexMetadata; }

    // Every tensor, shard by shard in data order.
    std::vector<const TensorInfo *> tensors() const;
    const TensorInfo *find(const std::string &name) const;
    const SafetensorsFile *shardOf(const std::string &name) const;
    uint64_t totalBytes() const;

private:
    std::string m_folder;
    std::string m_indexPath;
    std::vector<std::shared_ptr<const SafetensorsFile>> m_shards;
    std::map<std::string, size_t> m_shardOf; // tensor → index in m_shards
    std::map<std::string, std::string> m_indexMetadata;
};

// Accelerate's loader rule for a shard: __metadata__.format must be "pt" ("tf" and "flax" are
// refused, anything else is invalid); a file without metadata is read as "pt" and `warning` says so.
Result<void> checkTorchFormat(const SafetensorsFile &file, std::string *warning);

// An index names its shards relative to its folder: an empty or absolute name, one with a ".."
// part, or one whose symbolic links lead outside the folder is refused (the Hugging Face cache's
// snapshots/<rev>/<file> -> blobs/<hash> links excepted). The message names the shard.
Result<void> checkShardName(const std::string &folder, const std::string &name);

// Index files list a few thousand tensors; anything past this is not one.
constexpr uint64_t kMaxIndexBytes = 64u << 20;

// What a *.safetensors.index.json says: tensor -> shard file name (relative to the index's folder,
// without ".."), and its "metadata" (values that are not strings as compact JSON). An index
// without "weight_map" is read as the map itself.
struct CheckpointIndex {
    std::map<std::string, std::string> weightMap;
    std::map<std::string, std::string> metadata;
};
// Parses index text (no file is opened); `path` names it in errors.
Result<CheckpointIndex> parseCheckpointIndex(std::string_view text, const std::string &path);

// Finds the checkpoint file to open inside a folder (model.safetensors, else exactly one
// *.safetensors.index.json, else exactly one *.safetensors).
Result<std::string> resolveCheckpointPath(const std::string &folder);

} // namespace accel::bigmodel
