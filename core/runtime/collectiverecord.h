// Which collective this process waits in: a process-wide record, cheap enough to keep on every
// collective (one relaxed atomic add when issued, two atomic stores around the wait), read by the
// worker's stack dump (core/worker/stackdump.h) when `accel stack` asks a hung rank where it is.
//
// The sequence number counts the collectives this rank issued through the runtime (1, 2, ...).
// Every rank of a job issues the same collectives in the same order, so two ranks waiting in
// collectives with different numbers or names have diverged; the hang autopsy shows both.
#pragma once

#include <cstdint>

namespace accel::runtime {

enum class CollectiveKind : std::uint8_t { None, AllReduce, AllGather, ReduceScatter, Broadcast, Barrier };

// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "barrier" (torch.distributed's names),
// "" for None. A static string: safe to read from a signal handler.
const char *collectiveName(CollectiveKind kind);

struct CollectiveState {
    CollectiveKind kind = CollectiveKind::None; // the latest collective issued
    std::uint64_t sequence = 0;                 // its number; 0 = none issued yet
    bool waiting = false;                       // this process waits for it now
};

// Records that collective `kind` is issued; returns its sequence number.
std::uint64_t collectiveIssued(CollectiveKind kind);

// Marks the wait for an issued collective for the lifetime of the object.
class CollectiveWait {
public:
    CollectiveWait(CollectiveKind kind, std::uint64_t sequence);
    // Issues and waits at once (blocking collectives).
    explicit CollectiveWait(CollectiveKind kind) : CollectiveWait(kind, collectiveIssued(kind)) {}
    ~CollectiveWait();
    CollectiveWait(const CollectiveWait &) = delete;
    CollectiveWait &operator=(const CollectiveWait &) = delete;

private:
    CollectiveKind m_kind;
    std::uint64_t m_sequence;
};

// The record as it stands: lock-free, one atomic load (so kind, number and waiting always belong
// together), async-signal-safe.
CollectiveState currentCollective();

} // namespace accel::runtime
