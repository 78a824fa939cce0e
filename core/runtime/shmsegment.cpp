#include "core/runtime/shmsegment.h"

#include "core/rundir/shmsegments.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <stdexcept>
#include <sys/mman.h>
#include <thread>
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
            if (!name.empty())
                fd = ::shm_open(name.c_str(), O_RDWR, 0600);
        }
        if (fd < 0)
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

void publishCounter(void *base, int kind, int world, int rank, uint64_t value)
{
    counter(base, kind, world, rank)->store(value, std::memory_order_release);
}

void waitForCounters(void *base, int kind, int world, uint64_t sequence, double timeoutS, const std::atomic<bool> &stop,
                     const std::string &what)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutS);
    for (int r = 0; r < world; ++r) {
        auto *value = counter(base, kind, world, r);
        for (int spins = 0; value->load(std::memory_order_acquire) < sequence; ++spins) {
            if (spins < 64)
                continue;
            // The peer is still computing: give it the core.
            if (spins < 256) {
                std::this_thread::yield();
                continue;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(20));
            if (stop.load(std::memory_order_relaxed))
                throw std::runtime_error(what + ": stopped while waiting for rank " + std::to_string(r));
            if ((spins & 255) == 0 && std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error(what + ": rank " + std::to_string(r) + " did not reach step " +
                                         std::to_string(sequence) + " within " + std::to_string(int(timeoutS)) +
                                         " s (a peer rank stopped or hangs)");
        }
    }
}

} // namespace accel::runtime
