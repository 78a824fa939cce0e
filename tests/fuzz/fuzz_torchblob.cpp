// Fuzz target: one torch.save blob as a `.distcp` file holds it for every chunk (readTorchSavedTensor:
// libzip over the bytes, data.pkl through the restricted unpickler, the storage entry). Seeds are
// real chunks PyTorch 2.12.1 wrote (float32 2-D, bfloat16, float64, an empty shard). An error names
// the blob; an accepted blob gives exactly the bytes its size and dtype hold, never more than it has.
#include "core/plan/torchsaveblob.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace accel;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string blob(reinterpret_cast<const char *>(data), size);
    auto tensor = runtime::readTorchSavedTensor(blob, "blob");
    if (!tensor) {
        if (tensor.error().message.empty() || tensor.error().context.rfind("blob", 0) != 0)
            std::abort();
        return 0;
    }
    uint64_t values = 1;
    for (int64_t d : tensor->size)
        values *= uint64_t(d);
    if (tensor->bytes.size() != values * uint64_t(bigmodel::dtypeBits(tensor->dtype)) / 8 ||
        tensor->bytes.size() > size)
        std::abort();
    return 0;
}
