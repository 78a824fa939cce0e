// The strategies' collectives (sum and max all-reduce, sum reduce-scatter, all-gather, DDP's
// gradient mean) through shared memory, for a group whose ranks all run on this host: the one
// shared-memory transport of the runtime.
//
// Gloo sends every byte through loopback TCP: kernel copies both ways, on the cores the ranks
// compute on. Here the ranks map one POSIX segment (shmsegment.h) with one slot per rank, twice
// (alternate operations use alternate slot sets), and one result region. An operation: each rank
// copies its input into its slot, raises its counter, waits for every rank's counter, then reads
// what it needs straight from the peers' slots into its output. Sums run in rank order (slot 0 +
// slot 1 + ...), so every rank gets bit-identical results. One barrier per operation: a rank
// writes a slot set again two operations later, and no rank arrives at the operation in between
// before it has finished reading. Tensors larger than a slot travel in pieces.
// The gradient mean (allReduceMeanAsync) copies the gradients straight into the slot and writes the
// mean straight back into them (no staging buffer). Up to four ranks every rank sums all slots; above
// that each rank sums its 1/world chunk into the result region, a second barrier, and every rank
// reads the result: the same bits either way.
//
// Synchronous operations run on the calling thread (after any asynchronous ones still in flight);
// allGatherAsync and allReduceMeanAsync run on a communication thread, in submission order.
// Turned off by the variables create() is given set to 0 (the sharding engine's:
// ACCEL_SHM_COLLECTIVES or ACCEL_SHM_ALLREDUCE; DDP's gradients: ACCEL_SHM_ALLREDUCE); every rank
// must agree, which create() checks through the store.
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
    // Up to this many ranks every rank sums all slots of a gradient mean itself.
    static constexpr int kDirectMeanRanks = 4;

    // Collective over the group's `members` (global ranks in group order; this process is
    // members[groupRank]). Null on every member, with the reason in `why`, when the members are
    // not all on this host, one of `switches` is set to 0, or the segment cannot be set up.
    // `name` names the group in the store (the same on every member).
    static std::unique_ptr<ShmCollectives> create(c10d::Store &store, const std::string &name, int groupRank,
                                                  std::vector<int> members, double timeoutS, std::string *why,
                                                  size_t slotBytes = kDefaultSlotBytes,
                                                  const std::vector<std::string> &switches = {"ACCEL_SHM_COLLECTIVES",
                                                                                              "ACCEL_SHM_ALLREDUCE"});
    ~ShmCollectives() override;

    int rank() const override { return m_rank; }
    int size() const override { return m_world; }
    void allReduceSum(torch::Tensor &tensor) override;
    void reduceScatterSum(torch::Tensor &output, const torch::Tensor &input) override;
    void allGather(torch::Tensor &output, const torch::Tensor &input) override;
    Pending allGatherAsync(torch::Tensor output, torch::Tensor input) override;
    Pending allReduceMeanAsync(std::vector<torch::Tensor> tensors) override;
    std::string transport() const override { return "shared-memory"; }

private:
    enum class Kind { AllReduce, ReduceScatter, AllGather, Mean };
    ShmCollectives(int rank, int world, size_t slotBytes, double timeoutS, void *base, size_t mappedBytes);
    void execute(Kind kind, torch::Tensor &output, const torch::Tensor &input);
    void mean(const std::vector<torch::Tensor> &tensors);
    // One piece: `pieces` runs of `bytes` from `input` (run j at input + j * inputStride) into my
    // slot, then the barrier; returns the slot set to read from.
    int publish(const char *input, size_t pieces, size_t bytes, size_t inputStride);
    // The same for elements [begin, begin + count) of the vector `tensors` form together.
    int publish(const std::vector<torch::Tensor> &tensors, int64_t begin, int64_t count);
    char *slot(int set, int rank) const;
    char *result() const;
    Pending submit(Kind kind, torch::Tensor output, torch::Tensor input, std::vector<torch::Tensor> tensors);
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
        Kind kind = Kind::AllGather;
        torch::Tensor output, input;
        std::vector<torch::Tensor> tensors; // Kind::Mean
        std::promise<void> done;
    };
    std::mutex m_mutex;
    std::condition_variable m_wake;    // the thread: work queued
    std::condition_variable m_drained; // the caller: every queued operation finished
    std::deque<Work> m_queue;
    size_t m_unfinished = 0;      // queued or running asynchronous operations
    std::exception_ptr m_failure; // the first asynchronous failure: the ranks are out of step for good
    std::atomic<bool> m_stop{false};
    std::thread m_thread; // started by the first asynchronous operation
};

} // namespace accel::runtime
