// What the fuzz targets of checkpoint folders share (fuzz_mergeindex, fuzz_dcpmetadata): a folder of
// this process, removed at exit, the input written into it as one file, and the invariants of what a
// join returns: an error names a file of the folder; an accepted folder gives every tensor exactly
// its shape's bytes, never more in all than the folder's data files hold.
#pragma once

#include "core/plan/shardedfolder.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace accel::fuzz {

struct ScratchFolder {
    std::string path;
    explicit ScratchFolder(const std::string &name)
        : path((std::filesystem::temp_directory_path() / ("accel-fuzz-" + name + "-" + std::to_string(::getpid())))
                   .string())
    {
        std::filesystem::create_directories(path);
    }
    ~ScratchFolder()
    {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
};

inline void writeInput(const std::string &file, const uint8_t *data, size_t size)
{
    std::ofstream out(file, std::ios::binary | std::ios::trunc); // no fsync: many runs a second
    out.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
    if (!out)
        std::abort();
}

inline void checkJoined(const Result<std::vector<runtime::JoinedTensor>> &joined, const std::string &dir,
                        uint64_t maxBytes)
{
    if (!joined) {
        if (joined.error().message.empty() || joined.error().context.rfind(dir, 0) != 0)
            std::abort();
        return;
    }
    uint64_t total = 0;
    for (const auto &tensor : *joined) {
        uint64_t values = 1;
        for (int64_t d : tensor.shape)
            values *= uint64_t(d);
        if (tensor.bytes.size() != values * uint64_t(bigmodel::dtypeBits(tensor.dtype)) / 8)
            std::abort();
        total += tensor.bytes.size();
    }
    if (total > maxBytes)
        std::abort();
}

} // namespace accel::fuzz
