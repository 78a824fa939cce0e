#include "core/common/huggingfacehome.h"

#include "core/common/fileutil.h"

#include <cstdlib>

namespace accel {

std::string huggingFaceHome()
{
    if (const char *home = std::getenv("HF_HOME"); home && *home)
        return fileutil::expandUser(home);
    const char *xdg = std::getenv("XDG_CACHE_HOME");
    return fileutil::expandUser(std::string(xdg && *xdg ? xdg : "~/.cache") + "/huggingface");
}

std::string accelerateConfigFolder()
{
    return huggingFaceHome() + "/accelerate";
}

std::string accelerateDefaultConfigPath()
{
    return accelerateConfigFolder() + "/default_config.yaml";
}

} // namespace accel
