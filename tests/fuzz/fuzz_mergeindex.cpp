// Fuzz target: the index.json of a sharded checkpoint folder, as `accel merge-weights` and resume
// read it (joinShardedFolder), beside two fixed rank files (a 2x3 float weight split 4 + 2 and a
// bias of 2). An error names the file; an accepted index joins each tensor to exactly the bytes
// its shape holds, and never allocates more than the rank files hold.
#include "core/bigmodel/safetensorswriter.h"
#include "core/plan/shardedfolder.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <unistd.h>
#include <vector>

using namespace accel;

namespace {

// A folder of this process with the two rank files, removed at exit.
struct Folder {
    std::string path;
    Folder()
        : path((std::filesystem::temp_directory_path() / ("accel-fuzz-mergeindex-" + std::to_string(::getpid())))
                   .string())
    {
        std::filesystem::create_directories(path);
        std::vector<float> weight(6);
        std::iota(weight.begin(), weight.end(), 1.0f);
        const float bias[2] = {-1.0f, -2.0f};
        std::vector<bigmodel::TensorToWrite> rank0{{"fc.weight", bigmodel::DType::F32, {4}, weight.data(), 16}};
        std::vector<bigmodel::TensorToWrite> rank1{{"fc.weight", bigmodel::DType::F32, {2}, weight.data() + 4, 8},
                                                   {"fc.bias", bigmodel::DType::F32, {2}, bias, 8}};
        if (!bigmodel::writeSafetensors(path + "/rank0.safetensors", std::move(rank0)) ||
            !bigmodel::writeSafetensors(path + "/rank1.safetensors", std::move(rank1)))
            std::abort();
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
        std::ofstream index(dir + "/index.json", std::ios::binary | std::ios::trunc); // no fsync: many runs a second
        index.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
        if (!index)
            std::abort();
    }
    auto joined = runtime::joinShardedFolder(dir);
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
    if (total > 32) // the rank files hold 6 + 2 floats
        std::abort();
    return 0;
}
