// Fuzz target: an Accelerate config file, YAML or JSON (the first byte chooses), through the public
// API of core/config: parse with validation, then write it back and read the text written, which
// must parse again to the same text.
#include "core/config/configio.h"

#include <cstdint>
#include <cstdlib>

using namespace accel::config;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const ConfigFormat format = (data[0] & 1) ? ConfigFormat::Json : ConfigFormat::Yaml;
    const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
    Diagnostics diagnostics;
    auto config = parseConfig(text, format, "fuzz.yaml", &diagnostics);
    if (!config) {
        if (config.error().message.empty())
            std::abort();
        return 0;
    }
    const std::string written = serializeConfig(*config, format);
    auto again = parseConfig(written, format, "fuzz.yaml");
    if (!again || serializeConfig(*again, format) != written)
        std::abort(); // what we write, we read back unchanged
    return 0;
}
