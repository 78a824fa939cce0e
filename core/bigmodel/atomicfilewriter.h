// Streams a large file into a temporary sibling and renames it into place on commit(), so a crash
// never leaves a half-written checkpoint; used for files too big to build in memory first.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <string>

namespace accel::bigmodel {

class AtomicFileWriter {
public:
    AtomicFileWriter() = default;
    ~AtomicFileWriter(); // removes the temporary file when commit() was not reached
    AtomicFileWriter(const AtomicFileWriter &) = delete;
    AtomicFileWriter &operator=(const AtomicFileWriter &) = delete;

    Result<void> open(const std::string &path);
    Result<void> write(const void *data, uint64_t size);
    Result<void> commit(); // fsync, close, rename

private:
    std::string m_path;
    std::string m_temporary;
    int m_fd = -1;
};

} // namespace accel::bigmodel
