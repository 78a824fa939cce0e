#include "core/common/programs.h"

#include <cstdlib>
#include <filesystem>

namespace accel {

std::string runningProgramDir()
{
    std::error_code error;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
    return error ? std::string() : self.parent_path().string();
}

std::string workerProgramPath()
{
    if (const char *override = std::getenv(workerProgramVariable); override && *override)
        return override;
    const std::string dir = runningProgramDir();
    return (dir.empty() ? std::string(".") : dir) + "/accel-worker";
}

std::string scriptPython(const std::string &chosen, const char *pythonExec)
{
    if (pythonExec && *pythonExec)
        return pythonExec;
    return chosen.empty() ? std::string(defaultPython) : chosen;
}

} // namespace accel
