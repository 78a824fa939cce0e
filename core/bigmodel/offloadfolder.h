// Accelerate's disk-offload folder (facts 5.8): index.json (2-space indent, merged with an existing
// one) plus one raw <tensor name>.dat per tensor (C-order little-endian bytes, no header; bf16 as its
// int16 bit pattern under dtype "bfloat16"; 0-d tensors stored as one element with shape []).
// Entries may instead point into a safetensors file (lazy, nothing copied).
#pragma once

#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/dtype.h"
#include "core/bigmodel/mappedfile.h"
#include "core/common/result.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace accel::bigmodel {

struct OffloadEntry {
    std::string dtype; // numpy name ("float32", "int64", "bool") or "bfloat16"; torch name for fp8/fp6/fp4
    std::vector<int64_t> shape;
    std::string safetensorsFile; // lazy entries: read `weightName` from this file instead of a .dat
    std::string weightName;
};

// numpy-style name used in index.json for a dtype, and back.
std::string offloadDtypeName(DType dtype);
Result<DType> parseOffloadDtypeName(const std::string &name);

class OffloadFolder {
public:
    // Opens (creating the folder when needed) and reads index.json when it exists.
    static Result<OffloadFolder> open(const std::string &folder);

    const std::string &folder() const { return m_folder; }
    const std::vector<std::pair<std::string, OffloadEntry>> &entries() const { return m_entries; }
    const OffloadEntry *find(const std::string &name) const;

    // Writes <name>.dat and records it (index.json is written by save()).
    Result<void> writeTensor(const std::string &name, DType dtype, const std::vector<int64_t> &shape, const void *data,
                             uint64_t size);
    // Records a lazy entry that reads `weightName` from `safetensorsFile`.
    void addLazyTensor(const std::string &name, const std::string &safetensorsFile, const std::string &weightName,
                       DType dtype, const std::vector<int64_t> &shape);
    Result<void> save() const;

    // A mapped view of a stored tensor (.dat or lazy safetensors entry), size checked.
    struct View {
        DType dtype = DType::F32;
        std::vector<int64_t> shape;
        const std::byte *data = nullptr;
        uint64_t size = 0;
        std::shared_ptr<const void> keepAlive; // the mapping the data point into
    };
    Result<View> load(const std::string &name) const;

private:
    void put(const std::string &name, OffloadEntry entry);
    std::string m_folder;
    std::vector<std::pair<std::string, OffloadEntry>> m_entries;
};

// Writes every checkpoint tensor that `deviceOf` puts on "disk" into the folder: copied into .dat
// files, or as lazy entries pointing at the checkpoint's shards when `lazy` is true.
template <typename DeviceOf>
Result<size_t> offloadDiskTensors(const Checkpoint &checkpoint, OffloadFolder &folder, DeviceOf deviceOf, bool lazy)
{
    size_t count = 0;
    for (const TensorInfo *t : checkpoint.tensors()) {
        if (deviceOf(t->name) != "disk")
            continue;
        if (lazy) {
            folder.addLazyTensor(t->name, checkpoint.shardOf(t->name)->path(), t->name, t->dtype, t->shape);
        } else if (auto ok = folder.writeTensor(t->name, t->dtype, t->shape, t->data, t->byteSize()); !ok) {
            return tl::unexpected(ok.error());
        }
        ++count;
    }
    if (auto ok = folder.save(); !ok)
        return tl::unexpected(ok.error());
    return count;
}

} // namespace accel::bigmodel
