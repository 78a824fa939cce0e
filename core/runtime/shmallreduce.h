// Gradient all-reduce through shared memory, for ranks that all run on one machine.
//
// Gloo moves every gradient byte through loopback TCP (kernel copies both ways, on the cores the
// ranks compute on). When every rank is on this host, the ranks instead map one POSIX shared-memory
// segment: each copies its bucket into its own slot, reduces one 1/world chunk of the bucket over
// all slots (in rank order, so every rank ends with bit-identical sums), and copies the result back.
// Every bucket has its own slots and result in the segment, so gradients are copied straight into
// the slot and read straight from the result: no staging buffer. Two barriers per bucket, no
// system calls on the data path. Buckets are summed in submission order on a dedicated thread, so
// communication still overlaps the rest of backward.
//
// Used by GradientSync only (other collectives stay on the process group). Turned off with
// ACCEL_SHM_ALLREDUCE=0; every rank must agree, which create() checks through the store.
// Includes libtorch: only torch .cpp files include it.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/torch.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace accel::runtime {

class ShmAllReduce {
public:
    // Collective over all ranks. Returns null (every rank the same) when the ranks are not all on
    // this host, shared memory cannot be set up on some rank, or ACCEL_SHM_ALLREDUCE=0; `why`
    // then says which.
    // `buckets`: the element count of each bucket, all of `dtype`.
    static std::unique_ptr<ShmAllReduce> create(c10d::Store &store, int rank, int world,
                                                const std::vector<int64_t> &buckets, c10::ScalarType dtype,
                                                double timeoutS, std::string *why);
    ~ShmAllReduce();

    // This rank's slot for a bucket (write the bucket's values here, then submit) and the
    // bucket's sum over the ranks (valid once submit's future is ready, until the next submit of
    // the same bucket).
    torch::Tensor slot(size_t bucket) const;
    torch::Tensor result(size_t bucket) const;

    // Sums the slots of `bucket` over the ranks into result(bucket). Buckets must be submitted in
    // the same order on every rank. Runs on the communication thread in submission order; the
    // future rethrows a failure (e.g. a peer that never arrives within the timeout).
    std::shared_future<void> submit(size_t bucket);
    // The same, but every rank reads all slots and writes the mean straight into `outputs`
    // (contiguous tensors that tile the bucket in order, e.g. the parameters' gradients), on the
    // communication thread: no result region and no copy back. Worth it for a few ranks, where
    // reading every slot costs less than a second pass.
    std::shared_future<void> submitMean(size_t bucket, std::vector<torch::Tensor> outputs);

private:
    ShmAllReduce(int rank, int world, std::vector<int64_t> buckets, c10::ScalarType dtype, double timeoutS, void *base,
                 size_t mappedBytes);
    void run();
    struct Work {
        size_t bucket = 0;
        std::vector<torch::Tensor> outputs; // empty: sum into result(bucket)
        std::promise<void> done;
    };
    void reduce(Work &work);
    void meanInto(size_t bucket, const std::vector<torch::Tensor> &outputs);
    void waitAll(int which, uint64_t sequence);
    char *bucketBase(size_t bucket) const;

    int m_rank;
    int m_world;
    std::vector<int64_t> m_buckets;
    std::vector<size_t> m_offsets; // of each bucket's region (world slots, then the result)
    c10::ScalarType m_dtype;
    double m_timeoutS;
    void *m_base;
    size_t m_mappedBytes;
    uint64_t m_sequence = 0;

    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<Work> m_queue;
    std::atomic<bool> m_stop{false}; // the destructor: abandon waits for peers
    std::exception_ptr m_failure;    // communication thread only
    std::thread m_thread;
};

} // namespace accel::runtime
