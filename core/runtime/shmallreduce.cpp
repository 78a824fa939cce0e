#include "core/runtime/shmallreduce.h"

#include "core/rundir/shmsegments.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/mman.h>
#include <unistd.h>

namespace accel::runtime {

namespace {

constexpr size_t kLine = 64; // one counter per cache line
constexpr int kArrived = 0;  // slot written for this sequence number
constexpr int kReduced = 1;  // own chunk of the result written
constexpr int kCounterKinds = 2;

std::string text(const std::vector<uint8_t> &bytes)
{
    return std::string(bytes.begin(), bytes.end());
}

std::vector<uint8_t> bytes(const std::string &value)
{
    return std::vector<uint8_t>(value.begin(), value.end());
}

size_t roundUp(size_t value, size_t to)
{
    return (value + to - 1) / to * to;
}

size_t headerBytes(int world)
{
    return roundUp(size_t(kCounterKinds) * size_t(world) * kLine, 4096);
}

// The host part of what rendezvous stored under rank/<N>: "<host> pid <pid>".
std::string hostOf(const std::string &value)
{
    return value.substr(0, value.find(" pid "));
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

    // 1. Can this rank take part? Same host as every other rank, allowed, and the segment maps.
    std::string problem;
    const char *setting = std::getenv("ACCEL_SHM_ALLREDUCE");
    if (setting && std::strcmp(setting, "0") == 0)
        problem = "ACCEL_SHM_ALLREDUCE=0";
    if (problem.empty()) {
        const std::string mine = hostOf(text(store.get("rank/" + std::to_string(rank))));
        for (int r = 0; r < world && problem.empty(); ++r) {
            if (hostOf(text(store.get("rank/" + std::to_string(r)))) != mine)
                problem = "rank " + std::to_string(r) + " runs on another host";
        }
    }
    std::string name;
    int fd = -1;
    if (problem.empty()) {
        if (rank == 0) {
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
    } else if (rank == 0) {
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

    // 2. Agree: shared memory only when every rank can use it.
    store.set(prefix + "ok/" + std::to_string(rank), bytes(problem.empty() ? "1" : "0:" + problem));
    std::vector<std::string> keys;
    for (int r = 0; r < world; ++r)
        keys.push_back(prefix + "ok/" + std::to_string(r));
    store.wait(keys);
    std::string refusal;
    for (int r = 0; r < world && refusal.empty(); ++r) {
        const std::string answer = text(store.get(keys[size_t(r)]));
        if (answer != "1")
            refusal = "rank " + std::to_string(r) + ": " + answer.substr(2);
    }
    // Every rank has mapped (or given up on) the segment: its name is no longer needed.
    if (rank == 0 && !name.empty())
        ::shm_unlink(name.c_str());
    if (!refusal.empty()) {
        if (base != MAP_FAILED)
            ::munmap(base, mapped);
        if (why)
            *why = refusal;
        return nullptr;
    }
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
    auto *counters = static_cast<char *>(m_base);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(m_timeoutS);
    for (int r = 0; r < m_world; ++r) {
        auto *counter = reinterpret_cast<std::atomic<uint64_t> *>(counters + (size_t(which) * m_world + r) * kLine);
        for (int spins = 0; counter->load(std::memory_order_acquire) < sequence; ++spins) {
            if (spins < 64)
                continue;
            // The peer is still computing: give it the core.
            if (spins < 256) {
                std::this_thread::yield();
                continue;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(20));
            if (m_stop.load(std::memory_order_relaxed))
                throw std::runtime_error("shared-memory all-reduce: stopped while waiting for rank " +
                                         std::to_string(r));
            if ((spins & 255) == 0 && std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("shared-memory all-reduce: rank " + std::to_string(r) +
                                         " did not reach step " + std::to_string(sequence) + " within " +
                                         std::to_string(int(m_timeoutS)) + " s (a peer rank stopped or hangs)");
        }
    }
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
    auto *counters = static_cast<char *>(m_base);
    const auto publish = [&](int which, uint64_t sequence) {
        reinterpret_cast<std::atomic<uint64_t> *>(counters + (size_t(which) * m_world + m_rank) * kLine)
            ->store(sequence, std::memory_order_release);
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
