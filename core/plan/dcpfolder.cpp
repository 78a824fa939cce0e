#include "core/plan/dcpfolder.h"

#include "core/common/fileutil.h"
#include "core/plan/pickle.h"
#include "core/plan/torchsaveblob.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

namespace accel::runtime {

namespace fs = std::filesystem;

namespace {

using Kind = PickleValue::Kind;

// Every global DCP's Metadata (torch/distributed/checkpoint/metadata.py, filesystem.py) pickles in
// torch 2.x, checked against the files torch 2.12.1 writes: the dataclasses, torch.Size, the
// dtypes, the layout and memory-format encodings of TensorProperties, and the checkpoint's path.
PickleAllowList metadataAllowList()
{
    PickleAllowList allowed;
    for (const char *name : {"Metadata", "TensorStorageMetadata", "BytesStorageMetadata", "ChunkStorageMetadata",
                             "TensorProperties", "MetadataIndex", "StorageMeta", "_MEM_FORMAT_ENCODING"})
        allowed.push_back(std::string("torch.distributed.checkpoint.metadata.") + name);
    for (const char *name : {"torch.distributed.checkpoint.filesystem._StorageInfo", "torch.Size",
                             "torch.serialization._get_layout", "builtins.getattr", "pathlib.PosixPath",
                             "pathlib.PurePosixPath", "pathlib.WindowsPath", "collections.OrderedDict"})
        allowed.emplace_back(name);
    for (const std::string &global : torchDTypeGlobals())
        allowed.push_back(global);
    return allowed;
}

// A dataclass's fields: BUILD's state, a dict (or (None, dict) for a class with slots).
PickleRef fields(PickleRef object, const char *className)
{
    if (!object || object->kind != Kind::Object ||
        object->text != std::string("torch.distributed.checkpoint.") + className || !object->state)
        return nullptr;
    const PickleRef state = object->state;
    if (state->kind == Kind::Dict)
        return state;
    if (state->kind == Kind::Tuple && state->items.size() == 2 && state->items[1]->kind == Kind::Dict)
        return state->items[1];
    return nullptr;
}

// torch.Size((a, b, ...)) as numbers >= 0.
bool sizeOf(PickleRef value, std::vector<int64_t> *out)
{
    if (!value || value->kind != Kind::Object || value->text != "torch.Size" || value->items.size() != 1 ||
        value->items[0]->kind != Kind::Tuple)
        return false;
    out->clear();
    for (const PickleRef &item : value->items[0]->items) {
        if (item->kind != Kind::Int || item->integer < 0)
            return false;
        out->push_back(item->integer);
    }
    return true;
}

std::string text(PickleRef value)
{
    return value && value->kind == Kind::Text ? value->text : std::string();
}

struct Chunk {
    std::vector<int64_t> offsets, sizes;
    std::string file;
    int64_t offset = 0, length = 0;
};

struct DcpTensor {
    std::string fqn;
    bigmodel::DType dtype = bigmodel::DType::F32;
    std::vector<int64_t> shape;
    std::vector<Chunk> chunks;
    std::vector<std::string> path; // planner data: the keys of the nested state dict
};

std::string join(const std::vector<int64_t> &values)
{
    std::string out = "[";
    for (size_t i = 0; i < values.size(); ++i)
        out += (i ? ", " : "") + std::to_string(values[i]);
    return out + "]";
}

// Copies one chunk (C order, `chunk.sizes`) into the whole tensor at `chunk.offsets`.
void place(const DcpTensor &tensor, const Chunk &chunk, const std::vector<uint8_t> &values, size_t elementBytes,
           std::vector<uint8_t> *whole)
{
    const size_t dims = tensor.shape.size();
    if (dims == 0) {
        std::memcpy(whole->data(), values.data(), elementBytes);
        return;
    }
    const size_t row = size_t(chunk.sizes[dims - 1]) * elementBytes;
    uint64_t rows = 1;
    for (size_t d = 0; d + 1 < dims; ++d)
        rows *= uint64_t(chunk.sizes[d]);
    if (row == 0)
        return;
    std::vector<int64_t> index(dims, 0);
    for (uint64_t r = 0; r < rows; ++r) {
        uint64_t target = 0;
        for (size_t d = 0; d < dims; ++d)
            target = target * uint64_t(tensor.shape[d]) + uint64_t(chunk.offsets[d] + index[d]);
        std::memcpy(whole->data() + target * elementBytes, values.data() + r * row, row);
        for (size_t d = dims - 1; d-- > 0;) {
            if (++index[d] < chunk.sizes[d])
                break;
            index[d] = 0;
        }
    }
}

} // namespace

Result<std::vector<JoinedTensor>> joinDcpFolder(const std::string &folder)
{
    const std::string metadataPath = (fs::path(folder) / kDcpMetadataName).string();
    auto bytes = fileutil::readFile(metadataPath);
    if (!bytes)
        return tl::unexpected(bytes.error());
    auto root = readPickle(*bytes, metadataAllowList(), metadataPath);
    if (!root)
        return tl::unexpected(root.error());
    const auto invalid = [&metadataPath](const std::string &message) {
        return makeError(ErrorCode::InvalidInput, message, metadataPath);
    };
    const PickleRef metadata = fields(root->root, "metadata.Metadata");
    const PickleRef stateDict = metadata ? metadata->get("state_dict_metadata") : nullptr;
    const PickleRef storage = metadata ? metadata->get("storage_data") : nullptr;
    if (!stateDict || stateDict->kind != Kind::Dict || !storage || storage->kind != Kind::Dict)
        return invalid("not torch.distributed.checkpoint's Metadata with state_dict_metadata and storage_data");

    // Where every chunk is stored: (fqn, offsets) -> file, offset, length.
    std::map<std::pair<std::string, std::vector<int64_t>>, Chunk> stored;
    for (const auto &[key, value] : storage->entries) {
        const PickleRef index = fields(key, "metadata.MetadataIndex");
        const PickleRef info = fields(value, "filesystem._StorageInfo");
        Chunk chunk;
        const PickleRef offset = info ? info->get("offset") : nullptr;
        const PickleRef length = info ? info->get("length") : nullptr;
        const PickleRef transforms = info ? info->get("transform_descriptors") : nullptr;
        // A non-tensor entry (BytesStorageMetadata, refused below by name) has no offset (torch 2.12.1
        // leaves the key out).
        const PickleRef at = index ? index->get("offset") : nullptr;
        const bool bytesEntry = !at || at->kind == Kind::None;
        if (!index || !info || (!bytesEntry && !sizeOf(at, &chunk.offsets)) || !offset || !length ||
            offset->kind != Kind::Int || length->kind != Kind::Int || offset->integer < 0 || length->integer < 0)
            return invalid(
                "storage_data: an entry is not MetadataIndex -> _StorageInfo(relative_path, offset, length)");
        const std::string fqn = text(index->get("fqn"));
        if (transforms && transforms->kind == Kind::List && !transforms->items.empty())
            return invalid(fqn + ": stored through transforms (" + text(transforms->items[0]) +
                           "); only plain torch.save chunks are read");
        chunk.file = text(info->get("relative_path"));
        if (chunk.file.empty() || chunk.file.find('/') != std::string::npos ||
            chunk.file.find("..") != std::string::npos)
            return invalid(fqn + ": file \"" + chunk.file + "\" is not a file name inside the folder");
        chunk.offset = offset->integer;
        chunk.length = length->integer;
        // Inside its file, so that what the metadata claims is bounded by what is on disk.
        std::error_code ec;
        const auto fileSize = fs::file_size(fs::path(folder) / chunk.file, ec);
        if (ec || uint64_t(chunk.offset) > fileSize || uint64_t(chunk.length) > fileSize - uint64_t(chunk.offset))
            return invalid(fqn + ": bytes " + std::to_string(chunk.offset) + "+" + std::to_string(chunk.length) +
                           " of " + chunk.file +
                           (ec ? " (" + ec.message() + ")" : ", a file of " + std::to_string(fileSize) + " bytes") +
                           " are not there");
        stored[{fqn, chunk.offsets}] = chunk;
    }

    // Planner data by name (a dict's get() is a linear scan; a model has thousands of names).
    std::map<std::string, PickleRef> planner;
    if (const PickleRef data = metadata->get("planner_data"); data && data->kind == Kind::Dict)
        for (const auto &[key, value] : data->entries)
            if (key->kind == Kind::Text)
                planner.emplace(key->text, value);
    std::vector<DcpTensor> tensors;
    for (const auto &[key, value] : stateDict->entries) {
        DcpTensor tensor;
        tensor.fqn = text(key);
        const std::string what = "tensor " + tensor.fqn;
        if (value && value->kind == Kind::Object &&
            value->text == "torch.distributed.checkpoint.metadata.BytesStorageMetadata")
            return invalid(tensor.fqn + " is not a tensor (a value saved with torch.save, such as an optimizer's "
                                        "hyperparameters); model.safetensors holds tensors only: merge a model "
                                        "folder such as pytorch_model_fsdp_0");
        const PickleRef meta = fields(value, "metadata.TensorStorageMetadata");
        const PickleRef properties = meta ? meta->get("properties") : nullptr;
        const PickleRef chunks = meta ? meta->get("chunks") : nullptr;
        if (tensor.fqn.empty() || !meta || !properties || properties->kind != Kind::Object || !properties->state ||
            properties->state->kind != Kind::Tuple || properties->state->items.empty() ||
            !sizeOf(meta->get("size"), &tensor.shape) || !chunks || chunks->kind != Kind::List)
            return invalid(what + ": not TensorStorageMetadata(properties, size, chunks)");
        const PickleRef dtype = properties->state->items[0];
        const auto known = dtype->kind == Kind::Global ? dtypeOfTorchGlobal(dtype->text) : std::nullopt;
        tensor.dtype = known.value_or(tensor.dtype);
        if (!known || bigmodel::dtypeBits(tensor.dtype) % 8 != 0)
            return invalid(what + ": dtype " + (dtype->kind == Kind::Global ? dtype->text : std::string("?")) +
                           " is not one safetensors stores whole bytes of");
        uint64_t total = 1;
        for (int64_t size : tensor.shape) {
            if (size != 0 && total > uint64_t(INT64_MAX) / uint64_t(size))
                return invalid(what + ": shape " + join(tensor.shape) + " has more than 2^63 values");
            total *= uint64_t(size);
        }
        // The chunks must tile the tensor: inside it, no two overlapping, their values adding up.
        uint64_t covered = 0;
        for (const PickleRef &c : chunks->items) {
            const PickleRef chunkFields = fields(c, "metadata.ChunkStorageMetadata");
            Chunk chunk;
            if (!chunkFields || !sizeOf(chunkFields->get("offsets"), &chunk.offsets) ||
                !sizeOf(chunkFields->get("sizes"), &chunk.sizes) || chunk.offsets.size() != tensor.shape.size() ||
                chunk.sizes.size() != tensor.shape.size())
                return invalid(what + ": a chunk is not ChunkStorageMetadata(offsets, sizes) of its rank");
            uint64_t values = 1;
            for (size_t d = 0; d < tensor.shape.size(); ++d) {
                if (chunk.offsets[d] > tensor.shape[d] || chunk.sizes[d] > tensor.shape[d] - chunk.offsets[d])
                    return invalid(what + ": the chunk at " + join(chunk.offsets) + " of size " + join(chunk.sizes) +
                                   " reaches outside the shape " + join(tensor.shape));
                values *= uint64_t(chunk.sizes[d]);
            }
            for (const Chunk &other : tensor.chunks) {
                bool overlap = values > 0;
                for (size_t d = 0; d < tensor.shape.size() && overlap; ++d)
                    overlap = chunk.offsets[d] < other.offsets[d] + other.sizes[d] &&
                              other.offsets[d] < chunk.offsets[d] + chunk.sizes[d];
                if (overlap)
                    return invalid(what + ": the chunks at " + join(other.offsets) + " and " + join(chunk.offsets) +
                                   " overlap");
            }
            const auto where = stored.find({tensor.fqn, chunk.offsets});
            if (where == stored.end())
                return invalid(what + ": storage_data has no entry for the chunk at " + join(chunk.offsets));
            const std::vector<int64_t> sizes = chunk.sizes;
            chunk = where->second;
            chunk.sizes = sizes;
            // A chunk's blob holds at least its values: the tensor's size is bounded by the files.
            if (values * uint64_t(bigmodel::dtypeBits(tensor.dtype) / 8) > uint64_t(chunk.length))
                return invalid(what + ": the chunk at " + join(chunk.offsets) + " claims more values than its " +
                               std::to_string(chunk.length) + " stored bytes");
            covered += values;
            tensor.chunks.push_back(chunk);
        }
        if (covered != total)
            return invalid(what + ": the chunks hold " + std::to_string(covered) + " of " + std::to_string(total) +
                           " values");
        // Planner data: the nested keys the flattened name came from (("model", "fc1.weight")).
        const auto found = planner.find(tensor.fqn);
        const PickleRef path = found == planner.end() ? nullptr : found->second;
        if (path && (path->kind == Kind::Tuple || path->kind == Kind::List)) {
            for (const PickleRef &part : path->items) {
                if (part->kind != Kind::Text)
                    return invalid(what + ": its place in the state dict holds a list index; only dicts of tensors "
                                          "are merged");
                tensor.path.push_back(part->text);
            }
        }
        if (tensor.path.empty())
            tensor.path = {tensor.fqn};
        tensors.push_back(std::move(tensor));
    }
    if (tensors.empty())
        return invalid("the checkpoint holds no tensors");

    // Names as Accelerate's merge gives them: one top-level key is unwrapped; what is left must be
    // a tensor's name (deeper nesting cannot go into a safetensors file).
    std::set<std::string> top;
    for (const DcpTensor &t : tensors)
        top.insert(t.path.front());
    const size_t drop = top.size() == 1 && tensors.front().path.size() > 1 ? 1 : 0;
    std::set<std::string> names;
    std::vector<JoinedTensor> joined;
    for (DcpTensor &t : tensors) {
        if (t.path.size() != drop + 1)
            return invalid("tensor " + t.fqn + ": nested " + std::to_string(t.path.size() - drop) +
                           " levels deep in the state dict; a safetensors file holds a flat dict of tensors");
        JoinedTensor out;
        out.name = t.path.back();
        if (!names.insert(out.name).second)
            return invalid("two tensors named " + out.name);
        out.dtype = t.dtype;
        out.shape = t.shape;
        joined.push_back(std::move(out));
    }

    // The bytes: every chunk's blob read from its file and placed.
    for (size_t i = 0; i < tensors.size(); ++i) {
        const DcpTensor &t = tensors[i];
        const size_t elementBytes = size_t(bigmodel::dtypeBits(t.dtype) / 8);
        uint64_t total = 1;
        for (int64_t size : t.shape)
            total *= uint64_t(size);
        joined[i].bytes.assign(size_t(total * elementBytes), 0);
        for (const Chunk &chunk : t.chunks) {
            const std::string path = (fs::path(folder) / chunk.file).string();
            const std::string what = path + " at byte " + std::to_string(chunk.offset) + " (" + t.fqn + ")";
            auto fd = fileutil::openRegularFile(path);
            if (!fd)
                return tl::unexpected(fd.error());
            std::string blob(size_t(chunk.length), '\0');
            const ssize_t read = pread(*fd, blob.data(), blob.size(), off_t(chunk.offset));
            close(*fd);
            if (read != ssize_t(blob.size()))
                return makeError(ErrorCode::InvalidInput,
                                 "the file ends before the " + std::to_string(chunk.length) + " bytes .metadata names",
                                 what);
            auto saved = readTorchSavedTensor(blob, what);
            if (!saved)
                return tl::unexpected(saved.error());
            if (saved->dtype != t.dtype || saved->size != chunk.sizes)
                return makeError(ErrorCode::InvalidInput,
                                 "holds " + bigmodel::torchName(saved->dtype) + " " + join(saved->size) +
                                     ", .metadata says " + bigmodel::torchName(t.dtype) + " " + join(chunk.sizes),
                                 what);
            place(t, chunk, saved->bytes, elementBytes, &joined[i].bytes);
        }
    }
    return joined;
}

} // namespace accel::runtime
