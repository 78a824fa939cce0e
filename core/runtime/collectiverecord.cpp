#include "core/runtime/collectiverecord.h"

#include <atomic>

namespace accel::runtime {

namespace {

// One word, so a reader never sees the kind of one collective with the number of another:
// bits 0-7 the kind, bit 8 waiting, bits 16-63 the sequence number.
std::atomic<std::uint64_t> g_state{0};
std::atomic<std::uint64_t> g_issued{0};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "the stack dump reads the record in a signal handler");

constexpr std::uint64_t kWaitingBit = 1u << 8;

std::uint64_t pack(CollectiveKind kind, std::uint64_t sequence, bool waiting)
{
    return (sequence << 16) | (waiting ? kWaitingBit : 0) | static_cast<std::uint64_t>(kind);
}

} // namespace

const char *collectiveName(CollectiveKind kind)
{
    switch (kind) {
    case CollectiveKind::AllReduce:
        return "all_reduce";
    case CollectiveKind::AllGather:
        return "all_gather";
    case CollectiveKind::ReduceScatter:
        return "reduce_scatter";
    case CollectiveKind::Broadcast:
        return "broadcast";
    case CollectiveKind::Barrier:
        return "barrier";
    case CollectiveKind::None:
        break;
    }
    return "";
}

std::uint64_t collectiveIssued(CollectiveKind kind)
{
    const std::uint64_t sequence = g_issued.fetch_add(1, std::memory_order_relaxed) + 1;
    g_state.store(pack(kind, sequence, false), std::memory_order_relaxed);
    return sequence;
}

CollectiveWait::CollectiveWait(CollectiveKind kind, std::uint64_t sequence) : m_kind(kind), m_sequence(sequence)
{
    g_state.store(pack(kind, sequence, true), std::memory_order_relaxed);
}

CollectiveWait::~CollectiveWait()
{
    g_state.store(pack(m_kind, m_sequence, false), std::memory_order_relaxed);
}

CollectiveState currentCollective()
{
    const std::uint64_t word = g_state.load(std::memory_order_relaxed);
    CollectiveState state;
    state.kind = static_cast<CollectiveKind>(word & 0xff);
    state.waiting = (word & kWaitingBit) != 0;
    state.sequence = word >> 16;
    return state;
}

} // namespace accel::runtime
