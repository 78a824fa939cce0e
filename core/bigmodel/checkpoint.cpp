#include "core/bigmodel/checkpoint.h"

#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"

#include <algorithm>
#include <filesystem>

namespace accel::bigmodel {

namespace fs = std::filesystem;

namespace {

bool endsWith(const std::string &s, const std::string &suffix)
{
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isInside(const fs::path &path, const fs::path &folder)
{
    auto p = path.begin();
    for (auto f = folder.begin(); f != folder.end(); ++f, ++p) {
        if (p == path.end() || *p != *f)
            return false;
    }
    return true;
}

// The rule on the name alone (no file system access): relative, without "..".
Result<void> checkShardNameText(const std::string &name)
{
    const fs::path relative(name);
    if (name.empty() || relative.is_absolute())
        return makeError(ErrorCode::InvalidInput,
                         "shard \"" + name + "\" must be a file name relative to the checkpoint folder");
    for (const fs::path &part : relative) {
        if (part == "..")
            return makeError(ErrorCode::InvalidInput, "shard \"" + name + "\" points outside the checkpoint folder");
    }
    return {};
}

} // namespace

Result<CheckpointIndex> parseCheckpointIndex(std::string_view text, const std::string &path)
{
    jsonutil::JsonLimits limits;
    limits.maxBytes = kMaxIndexBytes;
    limits.rejectDuplicateKeys = true;
    auto parsed = jsonutil::parseJson(text, path, limits);
    if (!parsed)
        return tl::unexpected(parsed.error());
    const nlohmann::json &root = *parsed;
    if (!root.is_object())
        return makeError(ErrorCode::InvalidInput, "the index is not a JSON object", path);
    CheckpointIndex index;
    const auto weights = root.find("weight_map");
    const nlohmann::json &map = weights != root.end() ? *weights : root;
    if (!map.is_object())
        return makeError(ErrorCode::InvalidInput, "\"weight_map\" is not an object", path);
    if (const auto metadata = root.find("metadata"); metadata != root.end() && metadata->is_object()) {
        for (auto it = metadata->begin(); it != metadata->end(); ++it)
            index.metadata[it.key()] = it->is_string() ? it->get<std::string>() : jsonutil::jsonExcerpt(*it, 1000);
    }
    for (auto it = map.begin(); it != map.end(); ++it) {
        if (!it->is_string())
            return makeError(ErrorCode::InvalidInput, "weight_map entry \"" + it.key() + "\" is not a file name", path);
        if (auto named = checkShardNameText(it->get<std::string>()); !named)
            return makeError(ErrorCode::InvalidInput, "weight_map entry \"" + it.key() + "\": " + named.error().message,
                             path);
        index.weightMap[it.key()] = it->get<std::string>();
    }
    return index;
}

Result<void> checkShardName(const std::string &folder, const std::string &name)
{
    if (auto named = checkShardNameText(name); !named)
        return named;
    const fs::path relative(name);
    // Symbolic links may not lead out of the folder either, except the Hugging Face cache's own
    // layout: <repo>/snapshots/<revision>/<file> -> <repo>/blobs/<hash>.
    std::error_code ec;
    const fs::path base = fs::weakly_canonical(fs::absolute(folder, ec), ec);
    const fs::path target = fs::weakly_canonical(fs::absolute(fs::path(folder) / relative, ec), ec);
    if (ec)
        return makeError(ErrorCode::InvalidInput, "shard \"" + name + "\" cannot be resolved: " + ec.message());
    if (isInside(target, base))
        return {};
    const fs::path repository = base.parent_path().parent_path();
    if (base.parent_path().filename() == "snapshots" && isInside(target, repository / "blobs"))
        return {};
    return makeError(ErrorCode::InvalidInput,
                     "shard \"" + name + "\" is a link to " + target.string() + ", outside the checkpoint folder");
}

Result<void> checkTorchFormat(const SafetensorsFile &file, std::string *warning)
{
    const auto it = file.metadata().find("format");
    if (it == file.metadata().end()) {
        if (warning)
            *warning = file.path() + ": no __metadata__ format; read as a PyTorch (\"pt\") checkpoint";
        return {};
    }
    if (it->second == "pt")
        return {};
    if (it->second == "tf" || it->second == "flax")
        return makeError(ErrorCode::Unsupported,
                         "__metadata__ format \"" + it->second +
                             "\": only PyTorch (\"pt\") checkpoints can be loaded; convert it first",
                         file.path());
    return makeError(ErrorCode::InvalidInput, "__metadata__ format \"" + it->second + "\" is not one of pt, tf, flax",
                     file.path());
}

Result<std::string> resolveCheckpointPath(const std::string &folder)
{
    std::error_code ec;
    if (fs::exists(fs::path(folder) / "model.safetensors", ec)) // not a regular file: an error when opened
        return (fs::path(folder) / "model.safetensors").string();
    std::vector<std::string> indexes;
    std::vector<std::string> files;
    for (const auto &entry : fs::directory_iterator(folder, ec)) {
        const std::string name = entry.path().filename().string();
        if (endsWith(name, ".safetensors.index.json"))
            indexes.push_back(entry.path().string());
        else if (endsWith(name, ".safetensors"))
            files.push_back(entry.path().string());
    }
    if (ec)
        return makeError(ErrorCode::NotFound, "cannot list the folder: " + ec.message(), folder);
    if (indexes.size() == 1)
        return indexes.front();
    if (indexes.size() > 1)
        return makeError(ErrorCode::InvalidInput, "several *.safetensors.index.json files; name the one to use",
                         folder);
    if (files.size() == 1)
        return files.front();
    return makeError(ErrorCode::NotFound,
                     files.empty() ? "no model.safetensors and no *.safetensors.index.json"
                                   : "several .safetensors files and no index; name the one to use",
                     folder);
}

Result<Checkpoint> Checkpoint::open(const std::string &given)
{
    std::error_code ec;
    std::string path = given;
    if (fs::is_directory(given, ec)) {
        auto resolved = resolveCheckpointPath(given);
        if (!resolved)
            return tl::unexpected(resolved.error());
        path = *resolved;
    }
    if (!endsWith(path, ".json")) {
        auto file = SafetensorsFile::open(path);
        if (!file)
            return tl::unexpected(file.error());
        return fromFile(std::move(*file));
    }
    auto text = fileutil::readFile(path, kMaxIndexBytes);
    if (!text)
        return tl::unexpected(text.error());
    std::string folder = fs::path(path).parent_path().string();
    if (folder.empty())
        folder = ".";
    return fromIndex(path, *text, [&folder](const std::string &name) -> Result<std::shared_ptr<const SafetensorsFile>> {
        if (auto inside = checkShardName(folder, name); !inside)
            return tl::unexpected(inside.error());
        return SafetensorsFile::open((fs::path(folder) / name).string());
    });
}

Checkpoint Checkpoint::fromFile(std::shared_ptr<const SafetensorsFile> file)
{
    Checkpoint checkpoint;
    checkpoint.m_folder = fs::path(file->path()).parent_path().string();
    if (checkpoint.m_folder.empty())
        checkpoint.m_folder = ".";
    for (const TensorInfo &t : file->tensors())
        checkpoint.m_shardOf[t.name] = 0;
    checkpoint.m_shards.push_back(std::move(file));
    return checkpoint;
}

Result<Checkpoint> Checkpoint::fromIndex(const std::string &path, std::string_view text, const ShardOpener &openShard)
{
    Checkpoint checkpoint;
    checkpoint.m_folder = fs::path(path).parent_path().string();
    if (checkpoint.m_folder.empty())
        checkpoint.m_folder = ".";
    checkpoint.m_indexPath = path;
    auto index = parseCheckpointIndex(text, path);
    if (!index)
        return tl::unexpected(index.error());
    checkpoint.m_indexMetadata = std::move(index->metadata);
    const std::map<std::string, std::string> &weightMap = index->weightMap;
    std::map<std::string, std::string> shardNames; // shard -> the first tensor mapped to it
    for (const auto &[tensor, shard] : weightMap)
        shardNames.emplace(shard, tensor);
    for (const auto &[name, firstTensor] : shardNames) {
        auto file = openShard(name);
        if (!file) {
            if (file.error().code == ErrorCode::InvalidInput && file.error().context.empty())
                return makeError(ErrorCode::InvalidInput,
                                 "weight_map entry \"" + firstTensor + "\": " + file.error().message, path);
            return tl::unexpected(file.error());
        }
        const size_t shardIndex = checkpoint.m_shards.size();
        for (const TensorInfo &t : (*file)->tensors()) {
            if (checkpoint.m_shardOf.count(t.name))
                return makeError(ErrorCode::InvalidInput,
                                 "tensor \"" + t.name + "\" is in both " +
                                     checkpoint.m_shards[checkpoint.m_shardOf[t.name]]->path() + " and " +
                                     (*file)->path(),
                                 path);
            const auto mapped = weightMap.find(t.name);
            if (mapped == weightMap.end() || mapped->second != name)
                return makeError(ErrorCode::InvalidInput,
                                 "tensor \"" + t.name + "\" is in shard " + name + " but the index maps it to " +
                                     (mapped == weightMap.end() ? std::string("no file") : mapped->second),
                                 path);
            checkpoint.m_shardOf[t.name] = shardIndex;
        }
        checkpoint.m_shards.push_back(std::move(*file));
    }
    for (const auto &[tensor, file] : weightMap) {
        if (!checkpoint.m_shardOf.count(tensor))
            return makeError(ErrorCode::InvalidInput,
                             "tensor \"" + tensor + "\" is mapped to " + file + " but that shard does not hold it",
                             path);
    }
    return checkpoint;
}

std::vector<const TensorInfo *> Checkpoint::tensors() const
{
    std::vector<const TensorInfo *> all;
    for (const auto &shard : m_shards) {
        for (const TensorInfo &t : shard->tensors())
            all.push_back(&t);
    }
    return all;
}

const TensorInfo *Checkpoint::find(const std::string &name) const
{
    const auto it = m_shardOf.find(name);
    return it == m_shardOf.end() ? nullptr : m_shards[it->second]->find(name);
}

const SafetensorsFile *Checkpoint::shardOf(const std::string &name) const
{
    const auto it = m_shardOf.find(name);
    return it == m_shardOf.end() ? nullptr : m_shards[it->second].get();
}

uint64_t Checkpoint::totalBytes() const
{
    uint64_t total = 0;
    for (const auto &shard : m_shards)
        total += shard->header().dataSize;
    return total;
}

} // namespace accel::bigmodel
