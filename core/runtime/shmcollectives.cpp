#include "core/runtime/shmcollectives.h"

#include "core/runtime/shmsegment.h"

#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

namespace accel::runtime {

namespace {

constexpr int kArrived = 0; // the only counter kind: my slot holds this operation's input

size_t roundUp(size_t value, size_t to)
{
    return (value + to - 1) / to * to;
}

size_t headerBytes(int world)
{
    return roundUp(size_t(world) * kCounterLine, 4096);
}

// Why the shared-memory collectives are switched off, or empty.
std::string switchedOffBy()
{
    for (const char *name : {"ACCEL_SHM_COLLECTIVES", "ACCEL_SHM_ALLREDUCE"}) {
        const char *value = std::getenv(name);
        if (value && std::strcmp(value, "0") == 0)
            return std::string(name) + "=0";
    }
    return {};
}

// target[i] = sources[0][i] + sources[1][i] + ... in that order, for `count` elements.
template <typename T>
void sumInOrder(T *target, const std::vector<const char *> &sources, size_t count)
{
    const T *first = reinterpret_cast<const T *>(sources[0]);
    if (sources.size() == 2) {
        const T *second = reinterpret_cast<const T *>(sources[1]);
        for (size_t i = 0; i < count; ++i)
            target[i] = first[i] + second[i];
        return;
    }
    std::memcpy(target, first, count * sizeof(T));
    for (size_t r = 1; r < sources.size(); ++r) {
        const T *next = reinterpret_cast<const T *>(sources[r]);
        for (size_t i = 0; i < count; ++i)
            target[i] += next[i];
    }
}

void sumInOrder(c10::ScalarType dtype, char *target, const std::vector<const char *> &sources, size_t count)
{
    if (dtype == torch::kFloat32)
        return sumInOrder(reinterpret_cast<float *>(target), sources, count);
    if (dtype == torch::kFloat64)
        return sumInOrder(reinterpret_cast<double *>(target), sources, count);
    // Other types through libtorch's kernels, still in rank order.
    const auto options = torch::TensorOptions().dtype(dtype);
    const int64_t n = int64_t(count);
    auto out = torch::from_blob(target, {n}, options);
    out.copy_(torch::from_blob(const_cast<char *>(sources[0]), {n}, options));
    for (size_t r = 1; r < sources.size(); ++r)
        out.add_(torch::from_blob(const_cast<char *>(sources[r]), {n}, options));
}

} // namespace

std::unique_ptr<ShmCollectives> ShmCollectives::create(c10d::Store &store, const std::string &name, int groupRank,
                                                       std::vector<int> members, double timeoutS, std::string *why,
                                                       size_t slotBytes)
{
    // Every member creates its groups in the same order, so this names the same keys everywhere.
    static int generation = 0;
    const std::string prefix = "shmc/" + std::to_string(generation++) + "/" + name + "/";
    const int world = int(members.size());
    slotBytes = roundUp(std::max<size_t>(slotBytes, 4096), 4096);
    const size_t mapped = headerBytes(world) + 2 * size_t(world) * slotBytes;
    void *base = mapSharedSegment(store, prefix, groupRank, members, mapped, switchedOffBy(), why);
    if (!base)
        return nullptr;
    return std::unique_ptr<ShmCollectives>(new ShmCollectives(groupRank, world, slotBytes, timeoutS, base, mapped));
}

ShmCollectives::ShmCollectives(int rank, int world, size_t slotBytes, double timeoutS, void *base, size_t mappedBytes)
    : m_rank(rank), m_world(world), m_slotBytes(slotBytes), m_timeoutS(timeoutS), m_base(base),
      m_mappedBytes(mappedBytes)
{}

ShmCollectives::~ShmCollectives()
{
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    if (m_thread.joinable())
        m_thread.join();
    ::munmap(m_base, m_mappedBytes);
}

char *ShmCollectives::slot(int set, int rank) const
{
    return static_cast<char *>(m_base) + headerBytes(m_world) +
           (size_t(set) * size_t(m_world) + size_t(rank)) * m_slotBytes;
}

int ShmCollectives::publish(const char *input, size_t pieces, size_t bytes, size_t inputStride)
{
    const uint64_t sequence = ++m_sequence;
    const int set = int(sequence & 1);
    char *mine = slot(set, m_rank);
    for (size_t j = 0; j < pieces; ++j)
        std::memcpy(mine + j * bytes, input + j * inputStride, bytes);
    publishCounter(m_base, kArrived, m_world, m_rank, sequence);
    waitForCounters(m_base, kArrived, m_world, sequence, m_timeoutS, m_stop, "shared-memory collective");
    return set;
}

void ShmCollectives::execute(Kind kind, torch::Tensor &output, const torch::Tensor &input)
{
    const torch::Tensor in = input.contiguous();
    torch::Tensor out = output.is_contiguous() ? output : torch::empty_like(output, at::MemoryFormat::Contiguous);
    TORCH_CHECK(in.scalar_type() == out.scalar_type(), "shared-memory collective: input and output differ in dtype");
    const size_t element = in.element_size();
    const auto *source = static_cast<const char *>(in.data_ptr());
    auto *target = static_cast<char *>(out.data_ptr());
    const size_t world = size_t(m_world);
    std::vector<const char *> sources(world);
    if (kind == Kind::AllGather) {
        // Rank r's input becomes chunk r of every rank's output.
        const size_t total = size_t(in.numel()) * element;
        for (size_t begin = 0; begin < total; begin += m_slotBytes) {
            const size_t bytes = std::min(m_slotBytes, total - begin);
            const int set = publish(source + begin, 1, bytes, 0);
            for (size_t r = 0; r < world; ++r)
                std::memcpy(target + r * total + begin, slot(set, int(r)), bytes);
        }
    } else if (kind == Kind::ReduceScatter) {
        // A piece is the same elements of each of the world chunks; I sum the piece of my chunk.
        const size_t chunk = size_t(out.numel());
        const size_t step = std::max<size_t>(1, m_slotBytes / (world * element));
        for (size_t begin = 0; begin < chunk; begin += step) {
            const size_t count = std::min(step, chunk - begin);
            const int set = publish(source + begin * element, world, count * element, chunk * element);
            for (size_t r = 0; r < world; ++r)
                sources[r] = slot(set, int(r)) + size_t(m_rank) * count * element;
            sumInOrder(out.scalar_type(), target + begin * element, sources, count);
        }
    } else {
        const size_t total = size_t(in.numel());
        const size_t step = std::max<size_t>(1, m_slotBytes / element);
        for (size_t begin = 0; begin < total; begin += step) {
            const size_t count = std::min(step, total - begin);
            const int set = publish(source + begin * element, 1, count * element, 0);
            for (size_t r = 0; r < world; ++r)
                sources[r] = slot(set, int(r));
            sumInOrder(out.scalar_type(), target + begin * element, sources, count);
        }
    }
    if (!out.is_same(output))
        output.copy_(out);
}

void ShmCollectives::drain()
{
    while (!m_inFlight.empty()) {
        auto next = std::move(m_inFlight.front());
        m_inFlight.pop_front();
        next.get(); // rethrows the failure of an earlier asynchronous operation
    }
}

void ShmCollectives::allReduceSum(torch::Tensor &tensor)
{
    if (m_world == 1)
        return;
    drain();
    execute(Kind::AllReduce, tensor, tensor);
}

void ShmCollectives::reduceScatterSum(torch::Tensor &output, const torch::Tensor &input)
{
    TORCH_CHECK(input.numel() == output.numel() * size(), "reduceScatterSum: input holds ", input.numel(),
                " elements, expected ", output.numel() * size());
    if (m_world == 1) {
        output.copy_(input);
        return;
    }
    drain();
    execute(Kind::ReduceScatter, output, input);
}

void ShmCollectives::allGather(torch::Tensor &output, const torch::Tensor &input)
{
    TORCH_CHECK(output.numel() == input.numel() * size(), "allGather: output holds ", output.numel(),
                " elements, expected ", input.numel() * size());
    if (m_world == 1) {
        output.copy_(input);
        return;
    }
    drain();
    execute(Kind::AllGather, output, input);
}

Collectives::Pending ShmCollectives::allGatherAsync(torch::Tensor output, torch::Tensor input)
{
    TORCH_CHECK(output.numel() == input.numel() * size(), "allGather: output holds ", output.numel(),
                " elements, expected ", input.numel() * size());
    if (m_world == 1) {
        output.copy_(input);
        return [] {};
    }
    Work work;
    work.output = std::move(output);
    work.input = std::move(input);
    std::shared_future<void> done = work.done.get_future().share();
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_queue.push_back(std::move(work));
    }
    if (!m_thread.joinable())
        m_thread = std::thread([this] { run(); });
    m_wake.notify_one();
    m_inFlight.push_back(done);
    return [done] { done.get(); };
}

void ShmCollectives::run()
{
    std::exception_ptr failure; // after a failure the ranks are out of step for good
    for (;;) {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_wake.wait(lock, [this] { return m_stop || !m_queue.empty(); });
        if (m_queue.empty())
            return;
        Work work = std::move(m_queue.front());
        m_queue.pop_front();
        lock.unlock();
        if (failure) {
            work.done.set_exception(failure);
            continue;
        }
        try {
            execute(Kind::AllGather, work.output, work.input);
            work.done.set_value();
        } catch (...) {
            failure = std::current_exception();
            work.done.set_exception(failure);
        }
    }
}

} // namespace accel::runtime
