#include "core/rundir/processidentity.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#include <utility>

namespace accel::rundir {

namespace {
// Through syscall(): glibc 2.36's <sys/pidfd.h> declares these without C linkage.
int openPidfd(pid_t pid)
{
    return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

int sendSignal(int pidfd, int signalNumber)
{
    return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signalNumber, nullptr, 0));
}
} // namespace

bool isSignallablePid(std::int64_t pid)
{
    static_assert(sizeof(pid_t) == 4, "pid_t is 32 bits on Linux");
    return pid > 1 && pid <= INT32_MAX;
}

std::optional<ProcessStat> parseProcessStat(const std::string &line)
{
    // The command name (field 2) may hold spaces and parentheses; fields resume after the last ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos || close + 2 > line.size())
        return std::nullopt;
    std::istringstream fields(line.substr(close + 2));
    std::string field;
    ProcessStat stat;
    int index = 3; // field 3 (state) is the first after ')'
    for (; index <= 22 && fields >> field; ++index) {
        try {
            if (index == 3)
                stat.state = field.empty() ? '?' : field[0];
            else if (index == 4)
                stat.parent = std::stoll(field);
            else if (index == 5)
                stat.processGroup = std::stoll(field);
            else if (index == 6)
                stat.session = std::stoll(field);
            else if (index == 14 || index == 15)
                stat.cpuTicks += std::stoull(field);
            else if (index == 22)
                stat.startTime = std::stoull(field);
        } catch (const std::exception &) {
            return std::nullopt;
        }
    }
    if (index <= 22)
        return std::nullopt;
    return stat;
}

std::optional<ProcessStat> readAnyProcessStat(std::int64_t pid)
{
    if (!isSignallablePid(pid))
        return std::nullopt;
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line))
        return std::nullopt;
    return parseProcessStat(line);
}

std::optional<ProcessStat> readProcessStat(std::int64_t pid)
{
    auto stat = readAnyProcessStat(pid);
    if (!stat || stat->state == 'Z' || stat->state == 'X')
        return std::nullopt; // a zombie is not running
    return stat;
}

std::vector<std::int64_t> childProcesses(std::int64_t parent)
{
    std::vector<std::int64_t> children;
    DIR *proc = ::opendir("/proc");
    if (!proc)
        return children;
    while (const dirent *entry = ::readdir(proc)) {
        char *end = nullptr;
        const long long pid = std::strtoll(entry->d_name, &end, 10);
        if (!end || *end != '\0' || pid <= 0)
            continue;
        if (const auto stat = readAnyProcessStat(pid); stat && stat->parent == parent)
            children.push_back(pid);
    }
    ::closedir(proc);
    return children;
}

std::uint64_t processStartTime(std::int64_t pid)
{
    const auto stat = readProcessStat(pid);
    return stat ? stat->startTime : 0;
}

bool processMatches(std::int64_t pid, std::uint64_t recordedStartTime)
{
    return recordedStartTime != 0 && processStartTime(pid) == recordedStartTime;
}

std::optional<std::array<std::uint32_t, 4>> processUids(std::int64_t pid)
{
    if (!isSignallablePid(pid))
        return std::nullopt;
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("Uid:", 0) != 0)
            continue;
        std::istringstream fields(line.substr(4));
        std::array<std::uint32_t, 4> uids{};
        for (auto &uid : uids) {
            long long value = -1;
            if (!(fields >> value) || value < 0 || value > UINT32_MAX)
                return std::nullopt;
            uid = static_cast<std::uint32_t>(value);
        }
        return uids;
    }
    return std::nullopt;
}

Result<ProvenProcess> ProvenProcess::prove(const ProcessClaim &claim, std::uint32_t ownerUid)
{
    const std::string who = "pid " + std::to_string(claim.pid);
    if (!isSignallablePid(claim.pid))
        return makeError(ErrorCode::InvalidInput,
                         "not a process this run can own (expected 2.." + std::to_string(INT32_MAX) + ")", who);
    if (claim.startTime == 0)
        return makeError(ErrorCode::InvalidInput, "no start_time recorded: cannot prove it belongs to the run", who);
    const int pidfd = openPidfd(static_cast<pid_t>(claim.pid));
    if (pidfd < 0)
        return makeError(ErrorCode::NotFound, std::string("no such process: ") + std::strerror(errno), who);
    // The pidfd pins the process that had this pid when it was opened: checked after opening,
    // the stat below describes that same process (or it has exited, and signals do nothing).
    ProvenProcess proven(pidfd, claim.pid, false);
    const auto stat = readProcessStat(claim.pid);
    if (!stat)
        return makeError(ErrorCode::NotFound, "no such process (exited)", who);
    if (stat->startTime != claim.startTime)
        return makeError(ErrorCode::Failed,
                         "start time " + std::to_string(stat->startTime) + " is not the recorded " +
                             std::to_string(claim.startTime) + ": another process reuses the pid",
                         who);
    const std::int64_t group = claim.processGroup == ProcessClaim::NotRecorded ? claim.pid : claim.processGroup;
    const std::int64_t session = claim.session == ProcessClaim::NotRecorded ? claim.pid : claim.session;
    if (stat->processGroup != group || stat->session != session)
        return makeError(ErrorCode::Failed,
                         "process group " + std::to_string(stat->processGroup) + " / session " +
                             std::to_string(stat->session) + " are not the recorded " + std::to_string(group) + " / " +
                             std::to_string(session),
                         who);
    // The one fact the writer of run.json cannot copy from /proc: whose process it is.
    const auto uids = processUids(claim.pid);
    if (!uids)
        return makeError(ErrorCode::NotFound, "no such process (exited)", who);
    for (const std::uint32_t uid : *uids) {
        if (uid != ownerUid)
            return makeError(ErrorCode::Failed,
                             "runs as uid " + std::to_string(uid) + ", not as the run directory's owner (uid " +
                                 std::to_string(ownerUid) + ")",
                             who);
    }
    proven.m_leadsGroup = stat->processGroup == claim.pid;
    return proven;
}

ProvenProcess::ProvenProcess(ProvenProcess &&other) noexcept
    : m_pidfd(std::exchange(other.m_pidfd, -1)), m_pid(other.m_pid), m_leadsGroup(other.m_leadsGroup)
{}

ProvenProcess &ProvenProcess::operator=(ProvenProcess &&other) noexcept
{
    if (this != &other) {
        if (m_pidfd >= 0)
            ::close(m_pidfd);
        m_pidfd = std::exchange(other.m_pidfd, -1);
        m_pid = other.m_pid;
        m_leadsGroup = other.m_leadsGroup;
    }
    return *this;
}

ProvenProcess::~ProvenProcess()
{
    if (m_pidfd >= 0)
        ::close(m_pidfd);
}

bool ProvenProcess::signal(int signalNumber) const
{
    return m_pidfd >= 0 && sendSignal(m_pidfd, signalNumber) == 0;
}

bool ProvenProcess::signalGroup(int signalNumber) const
{
    // The leader is alive (checked through the pidfd), so its pid still names its own group.
    if (!m_leadsGroup || !isSignallablePid(m_pid) || !isAlive())
        return false;
    return ::killpg(static_cast<pid_t>(m_pid), signalNumber) == 0;
}

bool ProvenProcess::isAlive() const
{
    return m_pidfd >= 0 && !waitExited(0);
}

bool ProvenProcess::waitExited(int timeoutMs) const
{
    if (m_pidfd < 0)
        return true;
    pollfd entry{m_pidfd, POLLIN, 0};
    for (;;) {
        const int ready = ::poll(&entry, 1, timeoutMs);
        if (ready < 0 && errno == EINTR)
            continue;
        return ready > 0;
    }
}

} // namespace accel::rundir
