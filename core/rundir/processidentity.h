// Which processes belong to a run. A pid in run.json is only a claim: `accel stop` signals a
// process only when it can prove it is the one recorded (pid in range, same start time, same
// process group and session, and every uid of the process is the owner of the run directory),
// and signals it through a pidfd so that a pid reused between the proof and the signal is never
// hit. Never kill(-1, ...) or kill(0, ...). Start time, group and session are public
// (/proc/<pid>/stat): whoever writes run.json can copy them from any process; the owner check is
// what they cannot forge (docs/security.md, "Threat model").
#pragma once

#include "core/common/result.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::rundir {

// Fields of /proc/<pid>/stat that identify a process.
struct ProcessStat {
    char state = '?'; // R, S, D, Z, ...
    std::int64_t parent = 0;
    std::int64_t processGroup = 0;
    std::int64_t session = 0;
    std::uint64_t startTime = 0; // clock ticks since boot
    std::uint64_t cpuTicks = 0;  // user + system CPU time in clock ticks (fields 14 and 15)
};

// A pid that may be signalled at all: 1 < pid <= the largest pid_t. 0, 1, negatives and values
// that a cast would truncate (4294967297 -> 1) are not.
bool isSignallablePid(std::int64_t pid);
// Parses a /proc/<pid>/stat line; nullopt when malformed.
std::optional<ProcessStat> parseProcessStat(const std::string &line);
// The live (not zombie) process's stat; nullopt when the pid is not signallable or not running.
std::optional<ProcessStat> readProcessStat(std::int64_t pid);
// The processes whose parent is `parent`, zombies included (a scan of /proc).
std::vector<std::int64_t> childProcesses(std::int64_t parent);
// The process's stat, zombie or not; nullopt when there is no such process.
std::optional<ProcessStat> readAnyProcessStat(std::int64_t pid);
// Start time of a live process, 0 when none.
std::uint64_t processStartTime(std::int64_t pid);
// True when a live process has this pid and this start time. A recorded start time of 0 matches nothing.
bool processMatches(std::int64_t pid, std::uint64_t recordedStartTime);
// The real, effective, saved and filesystem uids of a process (/proc/<pid>/status "Uid:").
std::optional<std::array<std::uint32_t, 4>> processUids(std::int64_t pid);

// What run.json claims about one process.
struct ProcessClaim {
    std::int64_t pid = 0;
    std::uint64_t startTime = 0;
    // Group and session the process must be in. NotRecorded: it must lead its own (a rank's are
    // its pid). 0 is a real value: a process whose session leader lies outside the caller's pid
    // namespace (a container's init session) reads session 0.
    static constexpr std::int64_t NotRecorded = -1;
    std::int64_t processGroup = NotRecorded;
    std::int64_t session = NotRecorded;
};

// An open pidfd on a process proven to match its claim.
class ProvenProcess {
public:
    // Fails (ErrorCode::InvalidInput for impossible pids, NotFound when no such process, Failed
    // when a process with that pid is not the claimed one) with a message naming the mismatch.
    // `ownerUid` is the owner of the run directory whose run.json made the claim
    // (runDirectoryOwner): a process with any other uid (real, effective, saved or filesystem) is
    // not the run's, whatever the rest of the claim says.
    static Result<ProvenProcess> prove(const ProcessClaim &claim, std::uint32_t ownerUid);
    ProvenProcess(ProvenProcess &&other) noexcept;
    ProvenProcess &operator=(ProvenProcess &&other) noexcept;
    ProvenProcess(const ProvenProcess &) = delete;
    ProvenProcess &operator=(const ProvenProcess &) = delete;
    ~ProvenProcess();

    std::int64_t pid() const { return m_pid; }
    // Signals the process itself (pidfd_send_signal). False when it has exited.
    bool signal(int signalNumber) const;
    // Signals the process's whole group; only for a process that leads its own group (the
    // claim said so and it was checked). The leader is alive, so the group id is not reused.
    bool signalGroup(int signalNumber) const;
    // True while the process has not exited (the pidfd is not readable yet).
    bool isAlive() const;
    // Waits up to timeoutMs for the process to exit; true when it did.
    bool waitExited(int timeoutMs) const;

private:
    ProvenProcess(int pidfd, std::int64_t pid, bool leadsGroup) : m_pidfd(pidfd), m_pid(pid), m_leadsGroup(leadsGroup)
    {}
    int m_pidfd = -1;
    std::int64_t m_pid = 0;
    bool m_leadsGroup = false;
};

} // namespace accel::rundir
