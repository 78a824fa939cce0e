// Fuzz target: the index.json of a sharded checkpoint folder, as `accel merge-weights` and resume
// read it (joinShardedFolder), beside two fixed rank files (a 2x3 float weight split 4 + 2 and a
// bias of 2). An error names the file; an accepted index joins each tensor to exactly the bytes
// its shape holds, and never allocates more than the rank files hold.
#include "core/bigmodel/safetensorswriter.h"
#include "tests/fuzz/joinedfolder.h"

#include <numeric>

using namespace accel;

namespace {

// The folder with the two rank files.
const std::string &folder()
{
    static const fuzz::ScratchFolder instance("mergeindex");
    static const bool written = [] {
        std::vector<float> weight(6);
        std::iota(weight.begin(), weight.end(), 1.0f);
        const float bias[2] = {-1.0f, -2.0f};
        std::vector<bigmodel::TensorToWrite> rank0{{"fc.weight", bigmodel::DType::F32, {4}, weight.data(), 16}};
        std::vector<bigmodel::TensorToWrite> rank1{{"fc.weight", bigmodel::DType::F32, {2}, weight.data() + 4, 8},
                                                   {"fc.bias", bigmodel::DType::F32, {2}, bias, 8}};
        if (!bigmodel::writeSafetensors(instance.path + "/rank0.safetensors", std::move(rank0)) ||
            !bigmodel::writeSafetensors(instance.path + "/rank1.safetensors", std::move(rank1)))
            std::abort();
        return true;
    }();
    (void)written;
    return instance.path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string &dir = folder();
    fuzz::writeInput(dir + "/index.json", data, size);
    fuzz::checkJoined(runtime::joinShardedFolder(dir), dir, 32); // the rank files hold 6 + 2 floats
    return 0;
}
