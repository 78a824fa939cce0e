#include "core/runtime/shmcollectives.h"
#include "core/runtime/collectiverecord.h"

#include "core/runtime/shmsegment.h"

#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

namespace accel::runtime {

namespace {

constexpr int kArrived = 0; // my slot holds this operation's input
constexpr int kReduced = 1; // a mean above kDirectMeanRanks: my chunk of the piece is in the result region
constexpr int kCounterKinds = 2;

size_t roundUp(size_t value, size_t to)
{
    return (value + to - 1) / to * to;
}

size_t headerBytes(int world)
{
    return roundUp(size_t(kCounterKinds) * size_t(world) * kCounterLine, 4096);
}

// Why the shared-memory collectives are switched off, or empty.
std::string switchedOffBy(const std::vector<std::string> &switches)
{
    for (const std::string &name : switches) {
        const char *value = std::getenv(name.c_str());
        if (value && std::strcmp(value, "0") == 0)
            return name + "=0";
    }
    return {};
}

// Calls visit(tensor, first, count, at) for each run of elements [begin, begin + count) of the
// vector `tensors` form together: elements [first, first + count) of `tensor`, at `at` in the range.
template <typename Visit>
void forEachSpan(const std::vector<torch::Tensor> &tensors, int64_t begin, int64_t count, Visit &&visit)
{
    int64_t offset = 0;
    for (const auto &tensor : tensors) {
        const int64_t n = tensor.numel();
        const int64_t from = std::max(begin, offset), to = std::min(begin + count, offset + n);
        if (from < to)
            visit(tensor, from - offset, to - from, from - begin);
        offset += n;
        if (offset >= begin + count)
            return;
    }
}

// target = (sources[0] + sources[1] + ...) * (1 / world), summed in rank order: the same bits on
// every rank, one pass over memory.
void meanInto(c10::ScalarType dtype, char *target, const std::vector<const char *> &sources, int64_t count)
{
    const double scale = 1.0 / double(sources.size());
    if (dtype == torch::kFloat32) {
        float *out = reinterpret_cast<float *>(target);
        const float factor = float(scale);
        if (sources.size() == 2) {
            const float *a = reinterpret_cast<const float *>(sources[0]);
            const float *b = reinterpret_cast<const float *>(sources[1]);
            for (int64_t i = 0; i < count; ++i)
                out[i] = (a[i] + b[i]) * factor;
            return;
        }
        for (int64_t i = 0; i < count; ++i) {
            float sum = reinterpret_cast<const float *>(sources[0])[i];
            for (size_t r = 1; r < sources.size(); ++r)
                sum += reinterpret_cast<const float *>(sources[r])[i];
            out[i] = sum * factor;
        }
        return;
    }
    const auto options = torch::TensorOptions().dtype(dtype);
    auto view = torch::from_blob(target, {count}, options);
    view.copy_(torch::from_blob(const_cast<char *>(sources[0]), {count}, options));
    for (size_t r = 1; r < sources.size(); ++r)
        view.add_(torch::from_blob(const_cast<char *>(sources[r]), {count}, options));
    view.mul_(scale);
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
                                                       size_t slotBytes, const std::vector<std::string> &switches)
{
    // Every member creates its groups in the same order, so this names the same keys everywhere.
    static int generation = 0;
    const std::string prefix = "shmc/" + std::to_string(generation++) + "/" + name + "/";
    const int world = int(members.size());
    slotBytes = roundUp(std::max<size_t>(slotBytes, 4096), 4096);
    // Two slot sets of one slot per rank, then the result region of a mean above kDirectMeanRanks.
    const size_t mapped = headerBytes(world) + (2 * size_t(world) + 1) * slotBytes;
    void *base = mapSharedSegment(store, prefix, groupRank, members, mapped, switchedOffBy(switches), why);
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

char *ShmCollectives::result() const
{
    return slot(2, 0);
}

int ShmCollectives::publish(const std::vector<torch::Tensor> &tensors, int64_t begin, int64_t count)
{
    const uint64_t sequence = ++m_sequence;
    const int set = int(sequence & 1);
    char *mine = slot(set, m_rank);
    const size_t element = tensors.front().element_size();
    forEachSpan(tensors, begin, count, [&](const torch::Tensor &tensor, int64_t first, int64_t n, int64_t at) {
        std::memcpy(mine + size_t(at) * element, static_cast<const char *>(tensor.data_ptr()) + size_t(first) * element,
                    size_t(n) * element);
    });
    publishCounter(m_base, kArrived, m_world, m_rank, sequence);
    waitForCounters(m_base, kArrived, m_world, sequence, m_timeoutS, m_stop, "shared-memory collective");
    return set;
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

void ShmCollectives::mean(const std::vector<torch::Tensor> &tensors)
{
    if (tensors.empty())
        return;
    const c10::ScalarType dtype = tensors.front().scalar_type();
    const size_t element = c10::elementSize(dtype);
    const auto options = torch::TensorOptions().dtype(dtype);
    int64_t total = 0;
    for (const auto &tensor : tensors) {
        TORCH_CHECK(tensor.is_contiguous() && tensor.scalar_type() == dtype && tensor.device().is_cpu(),
                    "shared-memory mean: the tensors must be contiguous CPU tensors of one dtype");
        total += tensor.numel();
    }
    const size_t world = size_t(m_world);
    std::vector<const char *> sources(world);
    const int64_t step = std::max<int64_t>(1, int64_t(m_slotBytes / element));
    for (int64_t begin = 0; begin < total; begin += step) {
        const int64_t count = std::min(step, total - begin);
        const int set = publish(tensors, begin, count);
        if (m_world <= kDirectMeanRanks) {
            // Every rank reads every slot and writes the mean straight into its tensors.
            forEachSpan(tensors, begin, count, [&](const torch::Tensor &tensor, int64_t first, int64_t n, int64_t at) {
                for (size_t r = 0; r < world; ++r)
                    sources[r] = slot(set, int(r)) + size_t(at) * element;
                meanInto(dtype, static_cast<char *>(tensor.data_ptr()) + size_t(first) * element, sources, n);
            });
            continue;
        }
        // My chunk of the piece, summed in rank order into the result region; once every rank has
        // written its chunk, every rank reads the whole result. The region is free: every rank
        // arrived at this operation only after reading the previous result.
        const int64_t chunk = (count + m_world - 1) / m_world;
        const int64_t first = std::min(count, chunk * m_rank), last = std::min(count, first + chunk);
        if (last > first) {
            auto out = torch::from_blob(result() + size_t(first) * element, {last - first}, options);
            out.copy_(torch::from_blob(slot(set, 0) + size_t(first) * element, {last - first}, options));
            for (int r = 1; r < m_world; ++r)
                out.add_(torch::from_blob(slot(set, r) + size_t(first) * element, {last - first}, options));
        }
        publishCounter(m_base, kReduced, m_world, m_rank, m_sequence);
        waitForCounters(m_base, kReduced, m_world, m_sequence, m_timeoutS, m_stop, "shared-memory collective");
        const double scale = 1.0 / double(m_world);
        forEachSpan(tensors, begin, count, [&](const torch::Tensor &tensor, int64_t from, int64_t n, int64_t at) {
            auto target =
                torch::from_blob(static_cast<char *>(tensor.data_ptr()) + size_t(from) * element, {n}, options);
            at::mul_out(target, torch::from_blob(result() + size_t(at) * element, {n}, options), scale);
        });
    }
}

void ShmCollectives::drain()
{
    std::unique_lock<std::mutex> lock(m_mutex);
    m_drained.wait(lock, [this] { return m_unfinished == 0; });
    if (m_failure)
        std::rethrow_exception(m_failure); // an earlier asynchronous operation failed
}

void ShmCollectives::allReduceSum(torch::Tensor &tensor)
{
    if (m_world == 1)
        return;
    drain();
    CollectiveWait waiting(CollectiveKind::AllReduce);
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
    CollectiveWait waiting(CollectiveKind::ReduceScatter);
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
    CollectiveWait waiting(CollectiveKind::AllGather);
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
    return submit(Kind::AllGather, std::move(output), std::move(input), {});
}

Collectives::Pending ShmCollectives::allReduceMeanAsync(std::vector<torch::Tensor> tensors)
{
    if (m_world == 1 || tensors.empty())
        return [] {};
    return submit(Kind::Mean, {}, {}, std::move(tensors));
}

Collectives::Pending ShmCollectives::submit(Kind kind, torch::Tensor output, torch::Tensor input,
                                            std::vector<torch::Tensor> tensors)
{
    Work work;
    work.kind = kind;
    work.output = std::move(output);
    work.input = std::move(input);
    work.tensors = std::move(tensors);
    std::shared_future<void> done = work.done.get_future().share();
    const CollectiveKind recorded = kind == Kind::AllGather ? CollectiveKind::AllGather : CollectiveKind::AllReduce;
    const std::uint64_t sequence = collectiveIssued(recorded);
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_queue.push_back(std::move(work));
        ++m_unfinished;
        if (!m_thread.joinable())
            m_thread = std::thread([this] { run(); });
    }
    m_wake.notify_one();
    return [done, recorded, sequence] {
        CollectiveWait waiting(recorded, sequence);
        done.get();
    };
}

void ShmCollectives::run()
{
    for (;;) {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_wake.wait(lock, [this] { return m_stop || !m_queue.empty(); });
        if (m_queue.empty())
            return;
        Work work = std::move(m_queue.front());
        m_queue.pop_front();
        std::exception_ptr failure = m_failure; // after a failure the ranks are out of step for good
        lock.unlock();
        if (failure) {
            work.done.set_exception(failure);
        } else {
            try {
                torch::NoGradGuard noGrad;
                if (work.kind == Kind::Mean)
                    mean(work.tensors);
                else
                    execute(work.kind, work.output, work.input);
                work.done.set_value();
            } catch (...) {
                failure = std::current_exception();
                work.done.set_exception(failure);
            }
        }
        lock.lock();
        if (failure && !m_failure)
            m_failure = failure;
        --m_unfinished;
        m_drained.notify_all();
    }
}

} // namespace accel::runtime
