// A read-only memory mapping of a whole file. Held by shared_ptr: every tensor view into a
// checkpoint keeps its mapping alive, so a later torch loader can wrap the bytes zero-copy.
//
// A file truncated by another process while mapped makes any read of its lost pages raise SIGBUS,
// wherever the read happens (inside a torch kernel, on any thread), so no check before a read can
// catch it. The first mapping installs a SIGBUS handler: a fault inside a live mapping ends the
// process with exit code 1 and "error: <file>: the file shrank while mapped ..." on stderr; any
// other SIGBUS goes to the handler that was there before (the default: a crash).
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

    // Maps the pages holding [from, from + bytes) of this mapping in now (madvise
    // MADV_POPULATE_READ, Linux 5.14 and later; elsewhere, or if the kernel refuses, nothing): for
    // bytes kept resident and read at every forward, whose first read would otherwise fault them in
    // during the first prompt. Bytes outside the mapping are left alone.
    void populate(const std::byte *from, uint64_t bytes) const;

private:
    MappedFile() = default;
    int m_guardSlot = -1; // this mapping's entry for the SIGBUS handler (-1: table full, unguarded)
    std::string m_path;
    const std::byte *m_data = nullptr;
    uint64_t m_size = 0;
};

} // namespace accel::bigmodel
