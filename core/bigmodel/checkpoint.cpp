#include "core/bigmodel/checkpoint.h"

#include "core/common/fileutil.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

namespace accel::bigmodel {

namespace fs = std::filesystem;

namespace {

bool endsWith(const std::string &s, const std::string &suffix)
{
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

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
    if (fs::is_regular_file(fs::path(folder) / "model.safetensors", ec))
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
    Checkpoint checkpoint;
    checkpoint.m_folder = fs::path(path).parent_path().string();
    if (checkpoint.m_folder.empty())
        checkpoint.m_folder = ".";
    if (!endsWith(path, ".json")) {
        auto file = SafetensorsFile::open(path);
        if (!file)
            return tl::unexpected(file.error());
        for (const TensorInfo &t : (*file)->tensors())
            checkpoint.m_shardOf[t.name] = 0;
        checkpoint.m_shards.push_back(std::move(*file));
        return checkpoint;
    }

    checkpoint.m_indexPath = path;
    auto text = fileutil::readFile(path);
    if (!text)
        return tl::unexpected(text.error());
    nlohmann::json index;
    try {
        index = nlohmann::json::parse(*text);
    } catch (const nlohmann::json::exception &e) {
        return makeError(ErrorCode::InvalidInput, std::string("not valid JSON: ") + e.what(), path);
    }
    if (!index.is_object())
        return makeError(ErrorCode::InvalidInput, "the index is not a JSON object", path);
    const nlohmann::json &map = index.contains("weight_map") ? index["weight_map"] : index;
    if (!map.is_object())
        return makeError(ErrorCode::InvalidInput, "\"weight_map\" is not an object", path);
    if (index.contains("metadata") && index["metadata"].is_object()) {
        for (auto it = index["metadata"].begin(); it != index["metadata"].end(); ++it)
            checkpoint.m_indexMetadata[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
    }
    std::map<std::string, std::string> weightMap;
    std::set<std::string> shardNames;
    for (auto it = map.begin(); it != map.end(); ++it) {
        if (!it->is_string())
            return makeError(ErrorCode::InvalidInput, "weight_map entry \"" + it.key() + "\" is not a file name", path);
        weightMap[it.key()] = it->get<std::string>();
        shardNames.insert(it->get<std::string>());
    }
    for (const std::string &name : shardNames) {
        auto file = SafetensorsFile::open((fs::path(checkpoint.m_folder) / name).string());
        if (!file)
            return tl::unexpected(file.error());
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
