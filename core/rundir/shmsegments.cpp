#include "core/rundir/shmsegments.h"

#include "core/rundir/processidentity.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <memory>

namespace accel::rundir {

namespace {
constexpr const char *kAllReducePrefix = "accel-allreduce-";

// /proc/stat's btime: when the machine booted, in seconds since the epoch (0 when unreadable).
std::int64_t bootTimeSeconds()
{
    std::ifstream stat("/proc/stat");
    std::string key;
    while (stat >> key) {
        if (key == "btime") {
            std::int64_t seconds = 0;
            stat >> seconds;
            return seconds;
        }
        stat.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    return 0;
}

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

int removeSegmentsOfDeadProcesses()
{
    const std::unique_ptr<DIR, int (*)(DIR *)> folder(::opendir("/dev/shm"), ::closedir);
    if (!folder)
        return 0;
    const std::string prefix = kAllReducePrefix;
    const uid_t me = ::geteuid();
    int removed = 0;
    while (const dirent *entry = ::readdir(folder.get())) {
        const std::string name = entry->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0)
            continue;
        const size_t dash = name.find('-', prefix.size());
        const std::string pidText = name.substr(prefix.size(), dash == std::string::npos ? 0 : dash - prefix.size());
        if (dash == std::string::npos || pidText.empty() || pidText.size() > 10 ||
            pidText.find_first_not_of("0123456789") != std::string::npos || dash + 1 == name.size() ||
            name.find_first_not_of("0123456789", dash + 1) != std::string::npos)
            continue;
        struct stat st {};
        if (::fstatat(dirfd(folder.get()), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != me)
            continue;
        const std::int64_t pid = std::stoll(pidText);
        if (const std::optional<ProcessStat> stat = readAnyProcessStat(pid);
            stat && stat->state != 'Z' && stat->state != 'X') {
            // A live process with that pid: the creator unless it started after the segment was made
            // (a zombie has exited: whatever it made is nobody's now).
            const long ticks = ::sysconf(_SC_CLK_TCK);
            const std::int64_t boot = bootTimeSeconds();
            if (ticks <= 0 || boot <= 0 ||
                boot + static_cast<std::int64_t>(stat->startTime / static_cast<std::uint64_t>(ticks)) <=
                    static_cast<std::int64_t>(st.st_ctim.tv_sec) + 2)
                continue;
        }
        if (::shm_unlink(("/" + name).c_str()) == 0)
            ++removed;
    }
    return removed;
}

} // namespace accel::rundir
