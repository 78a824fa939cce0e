// Fuzz target: a model.safetensors.index.json. Accepted indexes only name shards inside the
// checkpoint folder (relative, no "..").
#include "core/bigmodel/checkpoint.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace accel::bigmodel;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    auto index = parseCheckpointIndex(text, "fuzz.safetensors.index.json");
    if (!index) {
        if (index.error().message.empty())
            std::abort();
        return 0;
    }
    for (const auto &[tensor, shard] : index->weightMap) {
        if (shard.empty() || shard.front() == '/' || shard == ".." || shard.rfind("../", 0) == 0 ||
            shard.find("/../") != std::string::npos ||
            (shard.size() >= 3 && shard.compare(shard.size() - 3, 3, "/..") == 0))
            std::abort();
    }
    return 0;
}
