// Reading safetensors checkpoints (facts 6.1-6.3): the header is parsed and every layout rule
// checked before a byte of tensor data is trusted; the data are viewed in place through a
// shared memory mapping, never copied.
#pragma once

#include "core/bigmodel/dtype.h"
#include "core/bigmodel/mappedfile.h"
#include "core/common/result.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace accel::bigmodel {

// Reference limit on the JSON header size.
constexpr uint64_t kMaxSafetensorsHeaderSize = 100000000;

struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t begin = 0; // offsets relative to the data buffer, end exclusive
    uint64_t end = 0;
    const std::byte *data = nullptr; // into the file's mapping; null for header-only reads

    uint64_t byteSize() const { return end - begin; }
    uint64_t elementCount() const;
};

struct SafetensorsHeader {
    uint64_t headerSize = 0; // N, the JSON length including padding
    uint64_t dataStart = 0;  // 8 + N: where the data buffer begins in the file
    uint64_t dataSize = 0;   // bytes of the data buffer
    bool hasMetadata = false;
    std::map<std::string, std::string> metadata;
    std::vector<TensorInfo> tensors; // sorted by data offsets
};

// Validates a safetensors file whose first `available` bytes are `bytes` (at least the 8-byte
// length and the header when the file is valid) and whose full size is `fileSize`. `path` names
// the file in errors. Tensor data pointers are set when the whole file is available.
Result<SafetensorsHeader> parseSafetensors(const std::byte *bytes, uint64_t available, uint64_t fileSize,
                                           const std::string &path);

// Reads and validates only the header of a file (no mapping; data pointers stay null).
Result<SafetensorsHeader> readSafetensorsHeader(const std::string &path);

class SafetensorsFile {
public:
    static Result<std::shared_ptr<const SafetensorsFile>> open(const std::string &path);
    // A file known by its header alone (a Hub model's shard read through HTTP range requests,
    // hubmodel.h): no mapping, data pointers null; `path` names it in messages.
    static std::shared_ptr<const SafetensorsFile> fromHeader(std::string path, SafetensorsHeader header);

    const std::string &path() const { return m_path; }
    const SafetensorsHeader &header() const { return m_header; }
    const std::vector<TensorInfo> &tensors() const { return m_header.tensors; }
    const std::map<std::string, std::string> &metadata() const { return m_header.metadata; }
    const TensorInfo *find(const std::string &name) const;
    // The mapping the tensors' data point into: hold it to keep the data valid (null for fromHeader).
    const std::shared_ptr<const MappedFile> &mapping() const { return m_mapping; }

private:
    std::string m_path;
    std::shared_ptr<const MappedFile> m_mapping;
    SafetensorsHeader m_header;
    std::unordered_map<std::string, size_t> m_index;
};

} // namespace accel::bigmodel
