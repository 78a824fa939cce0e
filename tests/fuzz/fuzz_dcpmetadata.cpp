// Fuzz target: the `.metadata` pickle of a torch.distributed.checkpoint folder, as `accel
// merge-weights` reads it (joinDcpFolder: the restricted unpickler, then DCP's Metadata), beside
// the two real `.distcp` files of tests/data/dcp/fsdp2 (an FSDP2 SHARDED_STATE_DICT checkpoint that
// PyTorch 2.12.1 wrote through Accelerate, 2 ranks). An error names the folder's file; an accepted
// metadata joins each tensor to exactly the bytes its shape holds, never more than the files hold.
#include "core/plan/dcpfolder.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace accel;

namespace {

// A folder of this process with the fixture's .distcp files, removed at exit.
struct Folder {
    std::string path;
    Folder()
        : path((std::filesystem::temp_directory_path() / ("accel-fuzz-dcpmetadata-" + std::to_string(::getpid())))
                   .string())
    {
        std::filesystem::create_directories(path);
        for (const char *name : {"__0_0.distcp", "__1_0.distcp"})
            std::filesystem::copy_file(std::string(ACCEL_DCP_FIXTURE) + "/" + name, path + "/" + name,
                                       std::filesystem::copy_options::overwrite_existing);
    }
    ~Folder()
    {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
};

const std::string &folder()
{
    static const Folder instance;
    return instance.path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string &dir = folder();
    {
        std::ofstream metadata(dir + "/.metadata", std::ios::binary | std::ios::trunc); // no fsync: many runs a second
        metadata.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
        if (!metadata)
            std::abort();
    }
    auto joined = runtime::joinDcpFolder(dir);
    if (!joined) {
        if (joined.error().message.empty() || joined.error().context.rfind(dir, 0) != 0)
            std::abort();
        return 0;
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
    if (total > 7949 + 9398) // the two .distcp files
        std::abort();
    return 0;
}
