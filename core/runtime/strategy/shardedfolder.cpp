#include "core/runtime/strategy/shardedfolder.h"

#include "core/bigmodel/safetensors.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/common/fileutil.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

namespace accel::runtime {

namespace fs = std::filesystem;

std::string modelFileName(size_t index)
{
    return index == 0 ? "model.safetensors" : "model_" + std::to_string(index) + ".safetensors";
}

std::string shardedModelFolderName(size_t index)
{
    return "pytorch_model_fsdp_" + std::to_string(index);
}

Result<std::vector<JoinedTensor>> joinShardedFolder(const std::string &folder)
{
    const std::string indexPath = (fs::path(folder) / kShardIndexName).string();
    auto text = fileutil::readFile(indexPath);
    if (!text)
        return tl::unexpected(text.error());
    std::vector<JoinedTensor> joined;
    std::map<std::string, std::shared_ptr<const bigmodel::SafetensorsFile>> files;
    try {
        const auto index = nlohmann::json::parse(*text);
        if (index.value("format", std::string()) != kShardFormat)
            return makeError(ErrorCode::InvalidInput,
                             std::string("format is not ") + kShardFormat + " (not a sharded checkpoint folder)",
                             indexPath);
        for (const auto &[name, entry] : index.at("tensors").items()) {
            JoinedTensor tensor;
            tensor.name = name;
            tensor.shape = entry.at("shape").get<std::vector<int64_t>>();
            uint64_t total = 1;
            for (int64_t d : tensor.shape)
                total *= uint64_t(std::max<int64_t>(d, 0));
            std::vector<std::pair<int64_t, int64_t>> covered; // [offset, offset + numel)
            bool first = true;
            for (const auto &piece : entry.at("pieces")) {
                const std::string file = piece.at("file").get<std::string>();
                if (file.find('/') != std::string::npos || file.find("..") != std::string::npos)
                    return makeError(
                        ErrorCode::InvalidInput,
                        "tensor " + name + ": piece file " + file + " is not a file name inside the folder", indexPath);
                if (!files.count(file)) {
                    auto opened = bigmodel::SafetensorsFile::open((fs::path(folder) / file).string());
                    if (!opened)
                        return tl::unexpected(opened.error());
                    files[file] = *opened;
                }
                const bigmodel::TensorInfo *info = files[file]->find(name);
                const std::string where = (fs::path(folder) / file).string();
                if (!info)
                    return makeError(ErrorCode::InvalidInput, "tensor " + name + " is missing", where);
                if (first) {
                    tensor.dtype = info->dtype;
                    tensor.bytes.assign(total * uint64_t(bigmodel::dtypeBits(info->dtype)) / 8, 0);
                    first = false;
                } else if (info->dtype != tensor.dtype) {
                    return makeError(ErrorCode::InvalidInput, "tensor " + name + ": pieces differ in dtype", where);
                }
                const int64_t offset = piece.at("offset").get<int64_t>(), numel = piece.at("numel").get<int64_t>();
                const uint64_t elementBytes = uint64_t(bigmodel::dtypeBits(info->dtype)) / 8;
                if (offset < 0 || numel < 0 || uint64_t(offset + numel) > total ||
                    info->elementCount() != uint64_t(numel))
                    return makeError(ErrorCode::InvalidInput,
                                     "tensor " + name + ": the piece at offset " + std::to_string(offset) + " (" +
                                         std::to_string(numel) + " values) does not fit its shape",
                                     where);
                std::memcpy(tensor.bytes.data() + uint64_t(offset) * elementBytes, info->data, info->byteSize());
                covered.emplace_back(offset, offset + numel);
            }
            // The pieces must tile the tensor: no gap, no overlap.
            std::sort(covered.begin(), covered.end());
            int64_t reached = 0;
            for (const auto &[begin, end] : covered) {
                if (begin != reached)
                    return makeError(ErrorCode::InvalidInput,
                                     "tensor " + name + ": " + (begin < reached ? "pieces overlap" : "a gap") +
                                         " at value " + std::to_string(std::min(begin, reached)),
                                     indexPath);
                reached = end;
            }
            if (uint64_t(reached) != total)
                return makeError(ErrorCode::InvalidInput,
                                 "tensor " + name + ": the pieces hold " + std::to_string(reached) + " of " +
                                     std::to_string(total) + " values",
                                 indexPath);
            joined.push_back(std::move(tensor));
        }
    } catch (const std::exception &e) {
        return makeError(ErrorCode::InvalidInput, e.what(), indexPath);
    }
    return joined;
}

Result<std::string> mergeWeights(const std::string &checkpointDir, const std::string &outputDir,
                                 const MergeOptions &options)
{
    std::error_code ec;
    if (!fs::is_directory(checkpointDir, ec))
        return makeError(ErrorCode::NotFound, "the checkpoint folder does not exist", checkpointDir);
    fs::path folder = checkpointDir;
    if (!fs::exists(folder / kShardIndexName) &&
        fs::exists(fs::path(checkpointDir) / kShardedModelFolder / kShardIndexName))
        folder /= kShardedModelFolder;
    if (!fs::exists(folder / kShardIndexName))
        return makeError(ErrorCode::InvalidInput,
                         std::string("no ") + kShardIndexName + " here: give a sharded model folder such as " +
                             checkpointDir + "/" + kShardedModelFolder,
                         checkpointDir);
    auto tensors = joinShardedFolder(folder.string());
    if (!tensors)
        return tl::unexpected(tensors.error());
    std::vector<bigmodel::TensorToWrite> entries;
    for (const auto &t : *tensors)
        entries.push_back({t.name, t.dtype, t.shape, t.bytes.data(), uint64_t(t.bytes.size())});
    fs::create_directories(outputDir, ec);
    if (ec)
        return makeError(ErrorCode::Io, "cannot create the output folder: " + ec.message(), outputDir);
    const std::string target = (fs::path(outputDir) / "model.safetensors").string();
    if (auto written = bigmodel::writeSafetensors(target, std::move(entries), {{"format", "pt"}}); !written)
        return tl::unexpected(written.error());
    if (options.removeCheckpointDir) {
        fs::remove_all(checkpointDir, ec);
        if (ec)
            return makeError(ErrorCode::Io, "merged, but the checkpoint folder could not be removed: " + ec.message(),
                             checkpointDir);
    }
    return target;
}

} // namespace accel::runtime
