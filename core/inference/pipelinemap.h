// The --device_map values that ask for pipeline-parallel inference under accel launch (the worker's
// core/worker/pipelinestage.h runs it): "pipeline" splits the layers evenly between the processes,
// and a map whose values name processes ("rank:0", "rank:1", ...) places them as written.
// Torch-free.
#pragma once

#include "core/inference/devicemapspec.h"

#include <string>

namespace accel::inference {

inline constexpr const char *kPipelineDeviceMap = "pipeline";
inline constexpr const char *kRankDevicePrefix = "rank:";

// "pipeline", or a JSON map (or a file holding one) with a "rank:N" value.
inline bool isPipelineDeviceMap(const std::string &spec)
{
    if (spec == kPipelineDeviceMap)
        return true;
    const size_t first = spec.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || spec == "cpu")
        return false;
    if (spec[first] == '{' && spec.find(kRankDevicePrefix) == std::string::npos)
        return false;
    auto resolved = resolveDeviceMap({spec, {}, {}, {}}, nullptr); // JSON text or a file (a strategy fails)
    if (!resolved)
        return false;
    const std::string prefix = kRankDevicePrefix;
    for (const auto &entry : resolved->map)
        if (entry.second.compare(0, prefix.size(), prefix) == 0)
            return true;
    return false;
}

} // namespace accel::inference
