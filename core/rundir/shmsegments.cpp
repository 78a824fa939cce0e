#include "core/rundir/shmsegments.h"

#include <dirent.h>
#include <sys/mman.h>

#include <memory>

namespace accel::rundir {

namespace {
constexpr const char *kAllReducePrefix = "accel-allreduce-";

std::string prefixOf(std::int64_t pid)
{
    return kAllReducePrefix + std::to_string(pid) + "-";
}
} // namespace

std::string allReduceSegmentName(std::int64_t pid, std::uint64_t nonce)
{
    return "/" + prefixOf(pid) + std::to_string(nonce);
}

int removeSegmentsOf(std::int64_t pid)
{
    if (pid <= 0)
        return 0;
    // POSIX shared memory lives in /dev/shm on Linux (glibc's shm_open maps names there).
    const std::unique_ptr<DIR, int (*)(DIR *)> folder(::opendir("/dev/shm"), ::closedir);
    if (!folder)
        return 0;
    const std::string prefix = prefixOf(pid);
    int removed = 0;
    while (const dirent *entry = ::readdir(folder.get())) {
        const std::string name = entry->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0 || name.size() == prefix.size() ||
            name.find_first_not_of("0123456789", prefix.size()) != std::string::npos)
            continue;
        if (::shm_unlink(("/" + name).c_str()) == 0)
            ++removed;
    }
    return removed;
}

} // namespace accel::rundir
