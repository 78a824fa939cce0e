// The sharding engine's collectives (sum all-reduce, sum reduce-scatter, all-gather) through
// shared memory, for a group whose ranks all run on this host.
//
// Gloo sends every byte through loopback TCP: kernel copies both ways, on the cores the ranks
// compute on. Here the ranks map one POSIX segment (shmsegment.h) with one slot per rank, twice
// (alternate operations use alternate slot sets). An operation: each rank copies its input into
// its slot, raises its counter, waits for every rank's counter, then reads what it needs straight
// from the peers' slots into its output. Sums run in rank order (slot 0 + slot 1 + ...), so every
// rank gets bit-identical results. One barrier per operation: a rank writes a slot set again two
// operations later, and no rank arrives at the operation in between before it has finished
// reading. Tensors larger than a slot travel in pieces.
//
// Synchronous operations run on the calling thread (after any asynchronous ones still in flight);
// allGatherAsync runs on a communication thread, in submission order.
// Turned off with ACCEL_SHM_COLLECTIVES=0 (or ACCEL_SHM_ALLREDUCE=0, which turns off every
// shared-memory path); every rank must agree, which create() checks through the store.
// Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/runtime/strategy/collectives.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

namespace accel::runtime {

class ShmCollectives : public Collectives {
public:
    static constexpr size_t kDefaultSlotBytes = size_t(4) << 20;

    // Collective over the group's `members` (global ranks in group order; this process is
    // members[groupRank]). Null on every member, with the reason in `why`, when the members are
    // not all on this host, shared memory is switched off, or the segment cannot be set up.
    // `name` names the group in the store (the same on every member).
    static std::unique_ptr<ShmCollectives> create(c10d::Store &store, const std::string &name, int groupRank,
                                                  std::vector<int> members, double timeoutS, std::string *why,
                                                  size_t slotBytes = kDefaultSlotBytes);
    ~ShmCollectives() override;

    int rank() const override { return m_rank; }
    int size() const override { return m_world; }
    void allReduceSum(torch::Tensor &tensor) override;
    void reduceScatterSum(torch::Tensor &output, const torch::Tensor &input) override;
    void allGather(torch::Tensor &output, const torch::Tensor &input) override;
    Pending allGatherAsync(torch::Tensor output, torch::Tensor input) override;
    std::string transport() const override { return "shared-memory"; }

private:
    enum class Kind { AllReduce, ReduceScatter, AllGather };
    ShmCollectives(int rank, int world, size_t slotBytes, double timeoutS, void *base, size_t mappedBytes);
    void execute(Kind kind, torch::Tensor &output, const torch::Tensor &input);
    // One piece: `pieces` runs of `bytes` from `input` (run j at input + j * inputStride) into my
    // slot, then the barrier; returns the slot set to read from.
    int publish(const char *input, size_t pieces, size_t bytes, size_t inputStride);
    char *slot(int set, int rank) const;
    void drain();
    void run();

    int m_rank;
    int m_world;
    size_t m_slotBytes;
    double m_timeoutS;
    void *m_base;
    size_t m_mappedBytes;
    uint64_t m_sequence = 0; // operations (pieces) so far; the caller's or the thread's, never both

    struct Work {
        torch::Tensor output, input;
        std::promise<void> done;
    };
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<Work> m_queue;
    std::deque<std::shared_future<void>> m_inFlight; // caller thread only
    std::atomic<bool> m_stop{false};
    std::thread m_thread; // started by the first asynchronous operation
};

} // namespace accel::runtime
