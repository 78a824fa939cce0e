#include "core/bigmodel/safetensorswriter.h"

#include "core/common/atomicfile.h"
#include "core/common/fileutil.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>

namespace accel::bigmodel {

namespace {

Result<void> checkTensor(const TensorToWrite &t, const std::string &path)
{
    const std::string who = "tensor \"" + t.name + "\": ";
    if (t.name.empty() || t.name == "__metadata__")
        return makeError(ErrorCode::InvalidInput, who + "this name is reserved", path);
    uint64_t elements = 1;
    for (int64_t d : t.shape) {
        if (d < 0)
            return makeError(ErrorCode::InvalidInput, who + "negative dimension " + std::to_string(d), path);
        elements *= static_cast<uint64_t>(d);
    }
    const uint64_t bits = elements * static_cast<uint64_t>(dtypeBits(t.dtype));
    if (bits % 8 != 0)
        return makeError(ErrorCode::InvalidInput,
                         who + std::to_string(elements) + " elements of " + dtypeCode(t.dtype) +
                             " are not a whole number of bytes",
                         path);
    if (bits / 8 != t.size)
        return makeError(ErrorCode::InvalidInput,
                         who + "has " + std::to_string(t.size) + " bytes but its shape and dtype need " +
                             std::to_string(bits / 8),
                         path);
    if (t.size > 0 && !t.data)
        return makeError(ErrorCode::InvalidInput, who + "no data", path);
    return {};
}

} // namespace

void sortForWriting(std::vector<TensorToWrite> &tensors)
{
    std::stable_sort(tensors.begin(), tensors.end(), [](const TensorToWrite &a, const TensorToWrite &b) {
        const int ra = dtypeWriterRank(a.dtype);
        const int rb = dtypeWriterRank(b.dtype);
        return ra != rb ? ra > rb : a.name < b.name;
    });
}

Result<std::string> buildSafetensorsHeader(const std::vector<TensorToWrite> &sorted, const Metadata &metadata)
{
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) {
        nlohmann::ordered_json meta = nlohmann::ordered_json::object();
        for (const auto &[key, value] : metadata)
            meta[key] = value;
        header["__metadata__"] = std::move(meta);
    }
    uint64_t offset = 0;
    for (const TensorToWrite &t : sorted) {
        nlohmann::ordered_json entry;
        entry["dtype"] = dtypeCode(t.dtype);
        entry["shape"] = t.shape;
        entry["data_offsets"] = {offset, offset + t.size};
        header[t.name] = std::move(entry);
        offset += t.size;
    }
    std::string text;
    try {
        text = header.dump();
    } catch (const nlohmann::json::exception &e) {
        return makeError(ErrorCode::InvalidInput, std::string("cannot encode the header: ") + e.what());
    }
    text.append((8 - text.size() % 8) % 8, ' ');
    return text;
}

Result<void> writeSafetensors(const std::string &path, std::vector<TensorToWrite> tensors, const Metadata &metadata)
{
    std::set<std::string> names;
    for (const TensorToWrite &t : tensors) {
        if (auto ok = checkTensor(t, path); !ok)
            return ok;
        if (!names.insert(t.name).second)
            return makeError(ErrorCode::InvalidInput, "tensor \"" + t.name + "\" appears twice", path);
    }
    sortForWriting(tensors);
    auto header = buildSafetensorsHeader(tensors, metadata);
    if (!header)
        return makeError(header.error().code, header.error().message, path);
    unsigned char length[8];
    uint64_t n = header->size();
    for (int i = 0; i < 8; ++i)
        length[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xFF);
    fileutil::AtomicFileWriter writer;
    if (auto ok = writer.open(path); !ok)
        return ok;
    if (auto ok = writer.write(length, 8); !ok)
        return ok;
    if (auto ok = writer.write(header->data(), header->size()); !ok)
        return ok;
    for (const TensorToWrite &t : tensors) {
        if (auto ok = writer.write(t.data, t.size); !ok)
            return ok;
    }
    return writer.commit();
}

std::vector<std::vector<size_t>> planShards(const std::vector<TensorToWrite> &tensors, uint64_t maxShardSize)
{
    std::vector<std::vector<size_t>> shards;
    std::vector<size_t> current;
    uint64_t currentSize = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const uint64_t size = tensors[i].size;
        if (size > maxShardSize) {
            shards.push_back({i});
            continue;
        }
        if (currentSize + size > maxShardSize && !current.empty()) {
            shards.push_back(std::move(current));
            current.clear();
            currentSize = 0;
        }
        current.push_back(i);
        currentSize += size;
    }
    if (!current.empty())
        shards.push_back(std::move(current));
    return shards;
}

Result<ShardedWrite> writeShardedSafetensors(const std::string &folder, const std::vector<TensorToWrite> &tensors,
                                             uint64_t maxShardSize, const Metadata &metadata, const std::string &base)
{
    namespace fs = std::filesystem;
    std::set<std::string> names;
    for (const TensorToWrite &t : tensors) {
        if (!names.insert(t.name).second)
            return makeError(ErrorCode::InvalidInput, "tensor \"" + t.name + "\" appears twice", folder);
    }
    const auto plan = planShards(tensors, maxShardSize);
    ShardedWrite result;
    const size_t count = plan.size();
    std::map<std::string, std::string> weightMap;
    for (size_t s = 0; s < count; ++s) {
        std::string file = base + ".safetensors";
        if (count > 1) {
            char buffer[64];
            std::snprintf(buffer, sizeof buffer, "-%05zu-of-%05zu", s + 1, count);
            file = base + buffer + ".safetensors";
        }
        std::vector<TensorToWrite> shard;
        for (size_t index : plan[s]) {
            shard.push_back(tensors[index]);
            weightMap[tensors[index].name] = file;
            result.totalSize += tensors[index].size;
        }
        if (auto ok = writeSafetensors(folder + "/" + file, std::move(shard), metadata); !ok)
            return tl::unexpected(ok.error());
        result.files.push_back(file);
    }
    // Stale shards of an earlier save with the same base name would confuse loaders.
    try {
        const std::regex pattern(std::regex_replace(base, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                                 R"(-\d{5}-of-\d{5}\.safetensors)");
        const std::set<std::string> keep(result.files.begin(), result.files.end());
        for (const auto &entry : fs::directory_iterator(folder)) {
            const std::string name = entry.path().filename().string();
            if (std::regex_match(name, pattern) && !keep.count(name))
                fs::remove(entry.path());
        }
    } catch (const std::exception &e) {
        return makeError(ErrorCode::Io, std::string("cannot remove stale shards: ") + e.what(), folder);
    }
    const std::string indexPath = folder + "/" + base + ".safetensors.index.json";
    if (count > 1) {
        nlohmann::json index;
        index["metadata"]["total_size"] = result.totalSize;
        index["weight_map"] = weightMap;
        if (auto ok = fileutil::writeFileAtomic(indexPath, index.dump(2) + "\n"); !ok)
            return tl::unexpected(ok.error());
        result.indexFile = base + ".safetensors.index.json";
    } else {
        std::error_code ignored;
        fs::remove(indexPath, ignored);
    }
    return result;
}

} // namespace accel::bigmodel
