#include "core/plan/shardedfolder.h"

#include "core/bigmodel/safetensors.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/common/jsondocument.h"
#include "core/plan/dcpfolder.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

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

namespace {

using json = nlohmann::json;

// Shapes, offsets and counts: whole numbers from 0 to 2^63-1.
std::optional<int64_t> count(const json &value)
{
    return jsonutil::integerValue(value, 0);
}

struct Piece {
    int64_t offset = 0;
    int64_t numel = 0;
    const bigmodel::TensorInfo *info = nullptr;
};

struct PlannedTensor {
    JoinedTensor tensor; // without its bytes yet
    uint64_t total = 0;  // values
    std::vector<Piece> pieces;
};

} // namespace

Result<std::vector<JoinedTensor>> joinShardedFolder(const std::string &folder)
{
    const std::string indexPath = (fs::path(folder) / kShardIndexName).string();
    jsonutil::JsonLimits limits;
    limits.rejectDuplicateKeys = true;
    auto parsed = jsonutil::readJsonFile(indexPath, limits);
    if (!parsed)
        return tl::unexpected(parsed.error());
    const json &index = *parsed;
    const auto invalid = [&indexPath](const std::string &message) {
        return makeError(ErrorCode::InvalidInput, message, indexPath);
    };
    if (!index.is_object() || index.value("format", json()) != kShardFormat)
        return invalid(std::string("format is not ") + kShardFormat + " (not a sharded checkpoint folder)");
    const auto tensors = index.find("tensors");
    if (tensors == index.end() || !tensors->is_object())
        return invalid("tensors: expected an object of tensor names to {\"shape\", \"pieces\"}");
    // First every tensor is checked against the index and the files' headers, allocating nothing:
    // its pieces must tile it, each from a different file whose tensor holds exactly that piece. The
    // bytes joined below are then the bytes the files hold, whatever shape the index claims (a
    // 180-byte index claiming [1000000, 517] made the old reader allocate 2 GB before checking).
    std::map<std::string, std::shared_ptr<const bigmodel::SafetensorsFile>> files;
    std::vector<PlannedTensor> plan;
    for (const auto &[name, entry] : tensors->items()) {
        const std::string what = "tensor " + name;
        const auto shape = entry.is_object() ? entry.find("shape") : entry.end();
        const auto pieces = entry.is_object() ? entry.find("pieces") : entry.end();
        if (shape == entry.end() || !shape->is_array() || pieces == entry.end() || !pieces->is_array())
            return invalid(what + ": expected {\"shape\": [...], \"pieces\": [...]}, got " +
                           jsonutil::jsonExcerpt(entry));
        PlannedTensor planned;
        planned.tensor.name = name;
        planned.total = 1;
        for (const json &dimension : *shape) {
            const auto size = count(dimension);
            if (!size)
                return invalid(what + ": shape " + jsonutil::jsonExcerpt(*shape) + ": expected whole numbers >= 0");
            planned.tensor.shape.push_back(*size);
            if (*size != 0 && planned.total > uint64_t(INT64_MAX) / uint64_t(*size))
                return invalid(what + ": shape " + jsonutil::jsonExcerpt(*shape) + " has more than 2^63 values");
            planned.total *= uint64_t(*size);
        }
        std::vector<std::string> used;
        for (const json &piece : *pieces) {
            const auto file = piece.is_object() ? piece.find("file") : piece.end();
            const auto offset = piece.is_object() && piece.contains("offset") ? count(piece["offset"]) : std::nullopt;
            const auto numel = piece.is_object() && piece.contains("numel") ? count(piece["numel"]) : std::nullopt;
            if (file == piece.end() || !file->is_string() || !offset || !numel)
                return invalid(what + ": piece " + jsonutil::jsonExcerpt(piece) +
                               ": expected {\"file\": name, \"offset\": n, \"numel\": n} with whole numbers >= 0");
            const std::string fileName = file->get<std::string>();
            if (fileName.empty() || fileName.find('/') != std::string::npos || fileName.find("..") != std::string::npos)
                return invalid(what + ": piece file " + fileName + " is not a file name inside the folder");
            if (std::find(used.begin(), used.end(), fileName) != used.end())
                return invalid(what + ": two pieces from " + fileName + " (each file holds one piece of a tensor)");
            used.push_back(fileName);
            if (!files.count(fileName)) {
                auto opened = bigmodel::SafetensorsFile::open((fs::path(folder) / fileName).string());
                if (!opened)
                    return tl::unexpected(opened.error());
                files[fileName] = *opened;
            }
            const bigmodel::TensorInfo *info = files[fileName]->find(name);
            const std::string where = (fs::path(folder) / fileName).string();
            if (!info)
                return makeError(ErrorCode::InvalidInput, what + " is missing", where);
            if (planned.pieces.empty())
                planned.tensor.dtype = info->dtype;
            else if (info->dtype != planned.tensor.dtype)
                return makeError(ErrorCode::InvalidInput, what + ": pieces differ in dtype", where);
            if (uint64_t(*offset) > planned.total || uint64_t(*numel) > planned.total - uint64_t(*offset) ||
                info->elementCount() != uint64_t(*numel))
                return makeError(ErrorCode::InvalidInput,
                                 what + ": the piece at offset " + std::to_string(*offset) + " (" +
                                     std::to_string(*numel) + " values) does not fit its shape",
                                 where);
            planned.pieces.push_back({*offset, *numel, info});
        }
        // The pieces must tile the tensor: no gap, no overlap.
        std::vector<Piece> sorted = planned.pieces;
        std::sort(sorted.begin(), sorted.end(), [](const Piece &a, const Piece &b) { return a.offset < b.offset; });
        int64_t reached = 0;
        for (const Piece &piece : sorted) {
            if (piece.offset != reached)
                return invalid(what + ": " + (piece.offset < reached ? "pieces overlap" : "a gap") + " at value " +
                               std::to_string(std::min(piece.offset, reached)));
            reached = piece.offset + piece.numel;
        }
        if (uint64_t(reached) != planned.total)
            return invalid(what + ": the pieces hold " + std::to_string(reached) + " of " +
                           std::to_string(planned.total) + " values");
        plan.push_back(std::move(planned));
    }
    std::vector<JoinedTensor> joined;
    joined.reserve(plan.size());
    for (PlannedTensor &planned : plan) {
        const uint64_t elementBytes = uint64_t(bigmodel::dtypeBits(planned.tensor.dtype)) / 8;
        planned.tensor.bytes.assign(planned.total * elementBytes, 0);
        for (const Piece &piece : planned.pieces)
            if (piece.info->byteSize() > 0)
                std::memcpy(planned.tensor.bytes.data() + uint64_t(piece.offset) * elementBytes, piece.info->data,
                            piece.info->byteSize());
        joined.push_back(std::move(planned.tensor));
    }
    return joined;
}

Result<int64_t> shardedFolderStep(const std::string &folder)
{
    const std::string indexPath = (fs::path(folder) / kShardIndexName).string();
    auto index = jsonutil::readJsonFile(indexPath);
    if (!index)
        return tl::unexpected(index.error());
    const auto step = index->is_object() ? index->find("step") : index->end();
    if (step == index->end())
        return 0;
    if (const auto number = count(*step))
        return *number;
    return makeError(ErrorCode::InvalidInput,
                     "step=" + jsonutil::jsonExcerpt(*step) + ": expected a whole number from 0 to 9223372036854775807",
                     indexPath);
}

namespace {

// DeepSpeed's checkpoint (what Accelerate's save_state writes under ZeRO): `latest` naming the tag
// folder (pytorch_model/) with *_model_states.pt and *_optim_states.pt, and zero_to_fp32.py beside it.
bool isDeepSpeedCheckpoint(const fs::path &folder)
{
    std::error_code ec;
    if (fs::is_regular_file(folder / "latest", ec) || fs::is_regular_file(folder / "zero_to_fp32.py", ec))
        return true;
    for (const auto &entry : fs::directory_iterator(folder, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.size() > 16 && (name.compare(name.size() - 16, 16, "_model_states.pt") == 0 ||
                                 name.compare(name.size() - 16, 16, "_optim_states.pt") == 0))
            return true;
    }
    return false;
}

// "a, b/, c and 4 more": what a folder holds, for the error that says it is no checkpoint.
std::string listing(const fs::path &folder)
{
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(folder, ec))
        names.push_back(entry.path().filename().string() + (entry.is_directory(ec) ? "/" : ""));
    if (names.empty())
        return "nothing (an empty folder)";
    std::sort(names.begin(), names.end());
    std::string out;
    const size_t shown = std::min<size_t>(names.size(), 8);
    for (size_t i = 0; i < shown; ++i)
        out += (i ? ", " : "") + names[i];
    if (names.size() > shown)
        out += " and " + std::to_string(names.size() - shown) + " more";
    return out;
}

} // namespace

Result<std::vector<JoinedTensor>> joinCheckpointFolder(const std::string &checkpointDir, std::string *format)
{
    std::error_code ec;
    if (!fs::is_directory(checkpointDir, ec))
        return makeError(ErrorCode::NotFound, "the checkpoint folder does not exist", checkpointDir);
    // The folder itself, or the model folder an Accelerate checkpoint holds.
    for (const fs::path &folder : {fs::path(checkpointDir), fs::path(checkpointDir) / kShardedModelFolder}) {
        if (fs::exists(folder / kShardIndexName, ec)) {
            *format = kShardFormat;
            return joinShardedFolder(folder.string());
        }
        if (fs::exists(folder / kDcpMetadataName, ec)) {
            *format = "torch.distributed.checkpoint";
            return joinDcpFolder(folder.string());
        }
    }
    if (isDeepSpeedCheckpoint(checkpointDir)) {
        // The script and `latest` sit in the checkpoint folder; given its tag folder (pytorch_model/),
        // the command names the folder above.
        std::error_code ec;
        fs::path root = fs::path(checkpointDir);
        if (!fs::exists(root / "latest", ec) && !fs::exists(root / "zero_to_fp32.py", ec)) {
            fs::path tag = fs::absolute(root, ec).lexically_normal();
            if (!tag.has_filename()) // "pytorch_model/"
                tag = tag.parent_path();
            root = tag.parent_path();
        }
        return makeError(ErrorCode::Unsupported,
                         "a DeepSpeed ZeRO checkpoint (" + listing(checkpointDir) +
                             "): accel merge-weights does not join ZeRO partitions; run the script DeepSpeed saved "
                             "with it: python " +
                             (root / "zero_to_fp32.py").string() + " " + root.string() +
                             " OUTPUT_DIR --safe_serialization",
                         checkpointDir);
    }
    return makeError(ErrorCode::InvalidInput,
                     std::string("not a sharded checkpoint: no ") + kDcpMetadataName +
                         " (torch.distributed.checkpoint, what Accelerate's SHARDED_STATE_DICT saves), no " +
                         kShardIndexName + " (accel's sharded folder), no DeepSpeed `latest`, here or in " +
                         kShardedModelFolder + "/; found " + listing(checkpointDir),
                     checkpointDir);
}

Result<std::string> mergeWeights(const std::string &checkpointDir, const std::string &outputDir,
                                 const MergeOptions &options, std::string *format)
{
    std::string found;
    auto tensors = joinCheckpointFolder(checkpointDir, &found);
    if (!tensors)
        return tl::unexpected(tensors.error());
    if (format)
        *format = found;
    std::error_code ec;
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
