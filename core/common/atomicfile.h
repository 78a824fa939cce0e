// The project's one atomic file writer: the bytes go to a temporary sibling (same folder, so the
// rename stays on one file system), are fsync'ed, and the file takes its name only in commit(), so
// a crash or an error never leaves a half-written file behind. Streams files too big to build in
// memory first (checkpoints, offloaded weights); fileutil::writeFileAtomic writes a whole buffer
// through it.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <string>

namespace accel::fileutil {

class AtomicFileWriter {
public:
    AtomicFileWriter() = default;
    ~AtomicFileWriter(); // removes the temporary file when commit() was not reached
    AtomicFileWriter(const AtomicFileWriter &) = delete;
    AtomicFileWriter &operator=(const AtomicFileWriter &) = delete;

    // Creates the temporary file beside `path` with the permissions an ordinary new file gets
    // (0666 less the umask). The folder must exist.
    Result<void> open(const std::string &path);
    Result<void> write(const void *data, uint64_t size);
    Result<void> commit(); // fsync, close, rename; the temporary file is removed on an error

private:
    std::string m_path;
    std::string m_temporary;
    int m_fd = -1;
};

} // namespace accel::fileutil
