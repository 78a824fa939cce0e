#include "core/runtime/shmsegment.h"

#include "core/rundir/shmsegments.h"

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/futex.h>
#include <random>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace accel::runtime {

namespace {

std::string text(const std::vector<uint8_t> &bytes)
{
    return std::string(bytes.begin(), bytes.end());
}

std::vector<uint8_t> bytes(const std::string &value)
{
    return std::vector<uint8_t>(value.begin(), value.end());
}

// The host part of what rendezvous stored under rank/<N>: "<host> pid <pid>".
std::string hostOf(const std::string &value)
{
    return value.substr(0, value.find(" pid "));
}

// The pid part of what rendezvous stored under rank/<N>; 0 when there is none.
std::int64_t pidOf(const std::string &value)
{
    const size_t at = value.find(" pid ");
    if (at == std::string::npos)
        return 0;
    char *end = nullptr;
    const long long pid = std::strtoll(value.c_str() + at + 5, &end, 10);
    return end && *end == '\0' && pid > 0 ? pid : 0;
}

// A segment a member opened by the name the group's first member published: it must be that
// member's (named after its pid, as it creates them), this user's and private (0600), and of the
// group's size; else another local user could hand the ranks a segment of theirs to read the
// gradients from.
std::string segmentProblem(int fd, const std::string &name, std::int64_t creatorPid, size_t mapped)
{
    std::string expected = rundir::allReduceSegmentName(creatorPid, 0);
    expected.pop_back(); // "/accel-allreduce-<pid>-", any nonce
    if (creatorPid == 0 || name.rfind(expected, 0) != 0)
        return "shared memory " + name + " is not named after the group's first rank (" + expected + "...)";
    struct stat info {};
    if (::fstat(fd, &info) != 0)
        return "shared memory " + name + ": " + std::strerror(errno);
    if (info.st_uid != ::geteuid() || (info.st_mode & 07777) != 0600)
        return "shared memory " + name + " is not this run's: owner uid " + std::to_string(info.st_uid) + ", mode " +
               std::to_string((info.st_mode >> 6) & 7) + std::to_string((info.st_mode >> 3) & 7) +
               std::to_string(info.st_mode & 7) + " (expected uid " + std::to_string(::geteuid()) + ", mode 600)";
    if (uint64_t(info.st_size) != uint64_t(mapped))
        return "shared memory " + name + " holds " + std::to_string(info.st_size) + " bytes, not the group's " +
               std::to_string(mapped);
    return {};
}

} // namespace

void *mapSharedSegment(c10d::Store &store, const std::string &prefix, int groupRank, const std::vector<int> &members,
                       size_t mapped, const std::string &disabledBy, std::string *why)
{
    const int world = int(members.size());
    // 1. Can this rank take part? Same host as every other member, allowed, and the segment maps.
    std::string problem = disabledBy;
    if (problem.empty()) {
        const std::string mine = hostOf(text(store.get("rank/" + std::to_string(members[size_t(groupRank)]))));
        for (int member : members) {
            if (problem.empty() && hostOf(text(store.get("rank/" + std::to_string(member)))) != mine)
                problem = "rank " + std::to_string(member) + " runs on another host";
        }
    }
    std::string name;
    int fd = -1;
    if (problem.empty()) {
        if (groupRank == 0) {
            std::random_device random;
            // Named after this process: if it dies before the unlink below, the supervisor removes
            // the segment once the rank has exited (core/rundir/shmsegments.h).
            name = rundir::allReduceSegmentName(::getpid(), random());
            fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
            if (fd >= 0 && ::ftruncate(fd, off_t(mapped)) != 0) {
                ::close(fd);
                ::shm_unlink(name.c_str());
                fd = -1;
            }
            store.set(prefix + "name", bytes(fd >= 0 ? name : std::string()));
        } else {
            name = text(store.get(prefix + "name"));
            if (!name.empty()) {
                const std::int64_t creator = pidOf(text(store.get("rank/" + std::to_string(members[0]))));
                fd = ::shm_open(name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd >= 0)
                    problem = segmentProblem(fd, name, creator, mapped);
                if (!problem.empty()) {
                    ::close(fd);
                    fd = -1;
                }
            }
        }
        if (fd < 0 && problem.empty())
            problem = "shared memory " + (name.empty() ? std::string("segment") : name) +
                      " is not available: " + std::strerror(errno);
    } else if (groupRank == 0) {
        store.set(prefix + "name", bytes(std::string()));
    } else {
        store.get(prefix + "name");
    }
    void *base = MAP_FAILED;
    if (fd >= 0) {
        base = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ::close(fd);
        if (base == MAP_FAILED)
            problem = std::string("cannot map the shared memory: ") + std::strerror(errno);
    }

    // 2. Agree: shared memory only when every member can use it.
    store.set(prefix + "ok/" + std::to_string(groupRank), bytes(problem.empty() ? "1" : "0:" + problem));
    std::vector<std::string> keys;
    for (int r = 0; r < world; ++r)
        keys.push_back(prefix + "ok/" + std::to_string(r));
    store.wait(keys);
    std::string refusal;
    for (int r = 0; r < world && refusal.empty(); ++r) {
        const std::string answer = text(store.get(keys[size_t(r)]));
        if (answer != "1")
            refusal = "rank " + std::to_string(members[size_t(r)]) + ": " + answer.substr(2);
    }
    // Every member has mapped (or given up on) the segment: its name is no longer needed.
    if (groupRank == 0 && !name.empty())
        ::shm_unlink(name.c_str());
    if (!refusal.empty()) {
        if (base != MAP_FAILED)
            ::munmap(base, mapped);
        if (why)
            *why = refusal;
        return nullptr;
    }
    return base;
}

namespace {

std::atomic<uint64_t> *counter(void *base, int kind, int world, int rank)
{
    return reinterpret_cast<std::atomic<uint64_t> *>(static_cast<char *>(base) +
                                                     (size_t(kind) * size_t(world) + size_t(rank)) * kCounterLine);
}

} // namespace

namespace {

// Waiting ranks sleep in the kernel on the low 32 bits of a peer's counter (a futex in the shared
// mapping, so not FUTEX_PRIVATE) until the peer raises it and wakes them: a rank that waits for a
// slower peer uses no CPU, which the peer's computing threads on the same cores need.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the futex word is the counter's low half");

uint32_t *futexWord(std::atomic<uint64_t> *value)
{
    return reinterpret_cast<uint32_t *>(value);
}

// How many ranks sleep on a counter: the next 4 bytes of its cache line. A publisher makes the
// wake-up system call only when someone sleeps (the store of the counter and the sleepers' count
// are both sequentially consistent, so either the publisher sees the sleeper or the sleeper sees
// the new value).
std::atomic<uint32_t> *sleepers(std::atomic<uint64_t> *value)
{
    static_assert(kCounterLine >= sizeof(uint64_t) + sizeof(uint32_t));
    return reinterpret_cast<std::atomic<uint32_t> *>(reinterpret_cast<char *>(value) + sizeof(uint64_t));
}

void wakeAll(std::atomic<uint64_t> *value)
{
    if (sleepers(value)->load(std::memory_order_seq_cst) > 0)
        syscall(SYS_futex, futexWord(value), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Sleeps until the counter no longer reads `seen`, at most `timeout`.
void sleepWhile(std::atomic<uint64_t> *value, uint64_t seen, std::chrono::microseconds timeout)
{
    sleepers(value)->fetch_add(1, std::memory_order_seq_cst);
    if (value->load(std::memory_order_seq_cst) == seen) {
        timespec span{};
        span.tv_sec = static_cast<time_t>(timeout.count() / 1000000);
        span.tv_nsec = static_cast<long>(timeout.count() % 1000000) * 1000;
        syscall(SYS_futex, futexWord(value), FUTEX_WAIT, static_cast<uint32_t>(seen), &span, nullptr, 0);
    }
    sleepers(value)->fetch_sub(1, std::memory_order_seq_cst);
}

} // namespace

void publishCounter(void *base, int kind, int world, int rank, uint64_t value)
{
    auto *word = counter(base, kind, world, rank);
    word->store(value, std::memory_order_seq_cst);
    wakeAll(word);
}

void waitForCounters(void *base, int kind, int world, uint64_t sequence, double timeoutS, const std::atomic<bool> &stop,
                     const std::string &what)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutS);
    for (int r = 0; r < world; ++r) {
        auto *value = counter(base, kind, world, r);
        for (int spins = 0;; ++spins) {
            const uint64_t seen = value->load(std::memory_order_acquire);
            if (seen >= sequence)
                break;
            if (spins < 64)
                continue;
            // The peer is still computing: sleep until it publishes (or 50 ms pass, to look at
            // the stop flag and the deadline).
            sleepWhile(value, seen, std::chrono::milliseconds(50));
            if (stop.load(std::memory_order_relaxed))
                throw std::runtime_error(what + ": stopped while waiting for rank " + std::to_string(r));
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error(what + ": rank " + std::to_string(r) + " did not reach step " +
                                         std::to_string(sequence) + " within " + std::to_string(int(timeoutS)) +
                                         " s (a peer rank stopped or hangs)");
        }
    }
}

} // namespace accel::runtime
