// Reads an Accelerate cluster config file through core/config (strict, with Accelerate's load
// fix-ups) and reduces it to the ConfigView the launch merge works on.
#pragma once

#include "core/common/result.h"
#include "launcher/launchmerge.h"

#include <string>

namespace accel::launcher {

struct LoadedConfig {
    ConfigView view;
    std::string yamlText; // the config as Accelerate would write it (cluster.yaml of the run)
};

// False when this build has no config library (then loadLaunchConfig always fails).
bool haveConfigSupport();
Result<LoadedConfig> loadLaunchConfig(const std::string &path);

} // namespace accel::launcher
