// One POSIX shared-memory segment mapped by the ranks of a group that all run on this host: the
// transport of the shared-memory collectives (shmcollectives.h).
// Includes libtorch's store header: only torch .cpp files include it.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace accel::runtime {

// Collective over `members` (the global ranks of the group, in group order; this process is
// members[groupRank]). Every member maps the same segment of `bytes` (zero-filled), or none does:
// null on every member when a member runs on another host (the hosts rendezvous stored under
// rank/<N>), cannot create or map the segment, or passes a non-empty `disabledBy` (the setting
// that turned shared memory off); `why` then names the member and the reason. `prefix` names the
// group's keys in the store: the same on every member, unique per call. The name of the segment
// is unlinked before this returns; munmap(result, bytes) when done.
void *mapSharedSegment(c10d::Store &store, const std::string &prefix, int groupRank, const std::vector<int> &members,
                       size_t bytes, const std::string &disabledBy, std::string *why);

// Rendezvous counters at the start of a segment: `kinds` x `world` uint64 values, one per cache
// line, each only ever raised by its own rank (kind k, rank r at line k * world + r).
constexpr size_t kCounterLine = 64;
void publishCounter(void *base, int kind, int world, int rank, uint64_t value);
// Returns once every rank's counter of `kind` reached `sequence`. Spins briefly, then sleeps in the
// kernel until the rank publishes (a futex on the counter, woken by publishCounter); throws a runtime_error starting
// with `what` when a rank does not arrive within timeoutS (a peer stopped or hangs) or `stop` is set.
void waitForCounters(void *base, int kind, int world, uint64_t sequence, double timeoutS, const std::atomic<bool> &stop,
                     const std::string &what);

} // namespace accel::runtime
