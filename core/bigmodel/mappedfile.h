// A read-only memory mapping of a whole file. Held by shared_ptr: every tensor view into a
// checkpoint keeps its mapping alive, so a later torch loader can wrap the bytes zero-copy.
#pragma once

#include "core/common/result.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace accel::bigmodel {

class MappedFile {
public:
    static Result<std::shared_ptr<const MappedFile>> open(const std::string &path);
    ~MappedFile();
    MappedFile(const MappedFile &) = delete;
    MappedFile &operator=(const MappedFile &) = delete;

    const std::string &path() const { return m_path; }
    const std::byte *data() const { return m_data; }
    uint64_t size() const { return m_size; }

    // Tells the kernel the bytes will be read soon, in order (madvise WILLNEED + SEQUENTIAL).
    void adviseSequential() const;

private:
    MappedFile() = default;
    std::string m_path;
    const std::byte *m_data = nullptr;
    uint64_t m_size = 0;
};

} // namespace accel::bigmodel
