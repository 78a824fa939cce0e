#include "core/runtime/shmallreduce.h"

#include "core/runtime/shmsegment.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace accel::runtime {

namespace {

constexpr int kArrived = 0; // slot written for this sequence number
constexpr int kReduced = 1; // own chunk of the result written
constexpr int kCounterKinds = 2;

size_t roundUp(size_t value, size_t to)
{
    return (value + to - 1) / to * to;
}

size_t headerBytes(int world)
{
    return roundUp(size_t(kCounterKinds) * size_t(world) * kCounterLine, 4096);
}

size_t slotBytes(int64_t elements, c10::ScalarType dtype)
{
    return roundUp(size_t(elements) * c10::elementSize(dtype), 4096);
}

size_t segmentBytes(int world, const std::vector<int64_t> &buckets, c10::ScalarType dtype)
{
    size_t total = headerBytes(world);
    for (int64_t elements : buckets)
        total += size_t(world + 1) * slotBytes(elements, dtype);
    return total;
}

} // namespace

std::unique_ptr<ShmAllReduce> ShmAllReduce::create(c10d::Store &store, int rank, int world,
                                                   const std::vector<int64_t> &buckets, c10::ScalarType dtype,
                                                   double timeoutS, std::string *why)
{
    // Every rank calls create() the same number of times, so this names the same keys everywhere.
    static int generation = 0;
    const std::string prefix = "shm/" + std::to_string(generation++) + "/";
    const size_t mapped = segmentBytes(world, buckets, dtype);
    const char *setting = std::getenv("ACCEL_SHM_ALLREDUCE");
    const std::string disabledBy = setting && std::strcmp(setting, "0") == 0 ? "ACCEL_SHM_ALLREDUCE=0" : "";
    std::vector<int> members;
    for (int r = 0; r < world; ++r)
        members.push_back(r);
    void *base = mapSharedSegment(store, prefix, rank, members, mapped, disabledBy, why);
    if (!base)
        return nullptr;
    return std::unique_ptr<ShmAllReduce>(new ShmAllReduce(rank, world, buckets, dtype, timeoutS, base, mapped));
}

ShmAllReduce::ShmAllReduce(int rank, int world, std::vector<int64_t> buckets, c10::ScalarType dtype, double timeoutS,
                           void *base, size_t mappedBytes)
    : m_rank(rank), m_world(world), m_buckets(std::move(buckets)), m_dtype(dtype), m_timeoutS(timeoutS), m_base(base),
      m_mappedBytes(mappedBytes)
{
    size_t offset = headerBytes(world);
    for (int64_t elements : m_buckets) {
        m_offsets.push_back(offset);
        offset += size_t(world + 1) * slotBytes(elements, dtype);
    }
    m_thread = std::thread([this] { run(); });
}

char *ShmAllReduce::bucketBase(size_t bucket) const
{
    return static_cast<char *>(m_base) + m_offsets.at(bucket);
}

torch::Tensor ShmAllReduce::slot(size_t bucket) const
{
    return torch::from_blob(bucketBase(bucket) + size_t(m_rank) * slotBytes(m_buckets[bucket], m_dtype),
                            {m_buckets[bucket]}, torch::TensorOptions().dtype(m_dtype));
}

torch::Tensor ShmAllReduce::result(size_t bucket) const
{
    return torch::from_blob(bucketBase(bucket) + size_t(m_world) * slotBytes(m_buckets[bucket], m_dtype),
                            {m_buckets[bucket]}, torch::TensorOptions().dtype(m_dtype));
}

ShmAllReduce::~ShmAllReduce()
{
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    m_thread.join();
    ::munmap(m_base, m_mappedBytes);
}

std::shared_future<void> ShmAllReduce::submit(size_t bucket)
{
    return submitMean(bucket, {});
}

std::shared_future<void> ShmAllReduce::submitMean(size_t bucket, std::vector<torch::Tensor> outputs)
{
    Work work;
    work.bucket = bucket;
    work.outputs = std::move(outputs);
    std::shared_future<void> future = work.done.get_future().share();
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_queue.push_back(std::move(work));
    }
    m_wake.notify_one();
    return future;
}

void ShmAllReduce::run()
{
    for (;;) {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_wake.wait(lock, [this] { return m_stop || !m_queue.empty(); });
        if (m_queue.empty())
            return;
        auto item = std::move(m_queue.front());
        m_queue.pop_front();
        lock.unlock();
        // After a failure the ranks are out of step for good: later buckets fail at once.
        if (m_failure) {
            item.done.set_exception(m_failure);
            continue;
        }
        try {
            torch::NoGradGuard noGrad;
            reduce(item);
            item.done.set_value();
        } catch (...) {
            m_failure = std::current_exception();
            item.done.set_exception(m_failure);
        }
    }
}

void ShmAllReduce::waitAll(int which, uint64_t sequence)
{
    waitForCounters(m_base, which, m_world, sequence, m_timeoutS, m_stop, "shared-memory all-reduce");
}

void ShmAllReduce::meanInto(size_t bucket, const std::vector<torch::Tensor> &outputs)
{
    const int64_t n = m_buckets[bucket];
    const size_t stride = slotBytes(n, m_dtype);
    const double scale = 1.0 / double(m_world);
    int64_t offset = 0;
    for (const torch::Tensor &out : outputs) {
        const int64_t count = out.numel();
        if (offset + count > n)
            throw std::logic_error("shared-memory all-reduce: outputs larger than the bucket");
        if (m_dtype == torch::kFloat32) {
            // Sum in rank order, then scale: the same bits on every rank, one pass over memory.
            float *target = out.data_ptr<float>();
            std::vector<const float *> slots;
            for (int r = 0; r < m_world; ++r)
                slots.push_back(reinterpret_cast<const float *>(bucketBase(bucket) + size_t(r) * stride) + offset);
            const float factor = float(scale);
            if (m_world == 2) {
                const float *a = slots[0], *b = slots[1];
                for (int64_t i = 0; i < count; ++i)
                    target[i] = (a[i] + b[i]) * factor;
            } else {
                for (int64_t i = 0; i < count; ++i) {
                    float sum = slots[0][i];
                    for (int r = 1; r < m_world; ++r)
                        sum += slots[size_t(r)][i];
                    target[i] = sum * factor;
                }
            }
        } else {
            const auto options = torch::TensorOptions().dtype(m_dtype);
            auto view = out.view({count});
            view.copy_(
                torch::from_blob(bucketBase(bucket) + size_t(offset) * c10::elementSize(m_dtype), {count}, options));
            for (int r = 1; r < m_world; ++r)
                view.add_(torch::from_blob(bucketBase(bucket) + size_t(r) * stride +
                                               size_t(offset) * c10::elementSize(m_dtype),
                                           {count}, options));
            view.mul_(scale);
        }
        offset += count;
    }
}

void ShmAllReduce::reduce(Work &work)
{
    const size_t bucket = work.bucket;
    const auto publish = [&](int which, uint64_t sequence) {
        publishCounter(m_base, which, m_world, m_rank, sequence);
    };
    const int64_t n = m_buckets[bucket];
    const size_t stride = slotBytes(n, m_dtype);
    const auto options = torch::TensorOptions().dtype(m_dtype);
    auto slotOf = [&](int r) { return torch::from_blob(bucketBase(bucket) + size_t(r) * stride, {n}, options); };
    // The slot was written by the submitting thread (the queue's mutex orders it before this).
    // Every rank sums every bucket in the same order, so one counter per rank names the round.
    const uint64_t sequence = ++m_sequence;
    publish(kArrived, sequence);
    waitAll(kArrived, sequence);
    if (!work.outputs.empty()) {
        meanInto(bucket, work.outputs);
        publish(kReduced, sequence);
        waitAll(kReduced, sequence); // every rank read my slot: the next round may overwrite it
        return;
    }
    // My chunk: [begin, end), summed in rank order so every rank gets the same bits. The result
    // region of this bucket is free: every rank arrived here only after reading its previous sum.
    const int64_t chunk = (n + m_world - 1) / m_world;
    const int64_t begin = std::min<int64_t>(n, chunk * m_rank), end = std::min<int64_t>(n, begin + chunk);
    if (end > begin) {
        auto out = result(bucket).narrow(0, begin, end - begin);
        out.copy_(slotOf(0).narrow(0, begin, end - begin));
        for (int r = 1; r < m_world; ++r)
            out.add_(slotOf(r).narrow(0, begin, end - begin));
    }
    publish(kReduced, sequence);
    // Once every rank reduced, the slots may be overwritten by the next round of this bucket.
    waitAll(kReduced, sequence);
}

} // namespace accel::runtime
