// Fuzz target: config.json. Accepted configs have sizes within modelLimits(); small ones are built
// into a module tree and sized, as the device-map planner does.
#include "core/bigmodel/modelfamilies.h"
#include "core/bigmodel/modulesizes.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

using namespace accel::bigmodel;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string text(reinterpret_cast<const char *>(data), size);
    auto config = parseModelConfig(text, "fuzz/config.json");
    if (!config) {
        if (config.error().message.empty() || config.error().context != "fuzz/config.json")
            std::abort();
        return 0;
    }
    const ModelLimits &limits = modelLimits();
    if (config->numLayers < 0 || config->numLayers > limits.layers || config->hiddenSize < 1 ||
        config->hiddenSize > limits.width || config->vocabSize < 1 || config->vocabSize > limits.vocabulary ||
        config->numHeads < 1 || config->numHeads > limits.heads || config->numExperts > limits.experts)
        std::abort();
    // Building is linear in layers x experts; keep each input fast (the limits bound the rest).
    if (config->numLayers * std::max<int64_t>(config->numExperts, 1) > 64)
        return 0;
    const ModelStructure structure = buildModelStructure(*config);
    const ModuleSizes sizes(structure, std::nullopt);
    if (structure.modules().empty() || sizes.of("") < structure.storageBytes() / 2)
        std::abort();
    return 0;
}
