// Bucketed gradient all-reduce, our counterpart of c10d::Reducer: buckets are summed through shared
// memory when every rank is on one host (shmallreduce.h), over the process group otherwise. Kept
// over the Reducer because the bench (tests/bench/runtime) measures it ahead of PyTorch's DDP, which
// is the Reducer over gloo (docs/platform.md). See GradientSync in accelerator_p.h.
#include "core/runtime/accelerator_p.h"

#include "core/runtime/strategy/gradienthooks.h"

namespace accel::runtime {

namespace {

// Up to this many ranks every rank reads all slots and writes the mean into the gradients itself.
constexpr int kDirectMeanRanks = 4;

} // namespace

GradientSync::GradientSync(c10::intrusive_ptr<c10d::Backend> group, std::vector<torch::Tensor> parameters,
                           int64_t bucketCapBytes)
    : m_group(std::move(group)), m_parameters(std::move(parameters))
{
    const size_t count = m_parameters.size();
    m_bucketOf.assign(count, 0);
    m_ready.assign(count, false);
    // Gradients arrive roughly in reverse registration order: bucket from the last parameter.
    Bucket current;
    int64_t currentBytes = 0;
    for (size_t k = 0; k < count; ++k) {
        const size_t i = count - 1 - k;
        const int64_t bytes = m_parameters[i].numel() * int64_t(m_parameters[i].element_size());
        // Like DDP, the first bucket is small (1 MiB) so communication starts early in backward.
        const int64_t cap = m_buckets.empty() ? std::min<int64_t>(bucketCapBytes, 1 << 20) : bucketCapBytes;
        if (!current.parameters.empty() &&
            (currentBytes + bytes > cap ||
             m_parameters[i].scalar_type() != m_parameters[current.parameters.front()].scalar_type())) {
            m_buckets.push_back(std::move(current));
            current = Bucket();
            currentBytes = 0;
        }
        current.parameters.push_back(i);
        current.elements += m_parameters[i].numel();
        currentBytes += bytes;
    }
    if (!current.parameters.empty())
        m_buckets.push_back(std::move(current));
    for (size_t b = 0; b < m_buckets.size(); ++b) {
        for (size_t i : m_buckets[b].parameters)
            m_bucketOf[i] = b;
        m_buckets[b].flat = torch::zeros({m_buckets[b].elements},
                                         m_parameters[m_buckets[b].parameters.front()].options().requires_grad(false));
    }
    for (size_t i = 0; i < count; ++i) {
        auto accumulator = torch::autograd::impl::grad_accumulator(m_parameters[i]);
        m_hookKeys.push_back(
            accumulator->add_post_hook(std::make_unique<GradientReadyHook>([this, i] { markReady(i); })));
        m_accumulators.push_back(std::move(accumulator));
    }
}

GradientSync::~GradientSync()
{
    try {
        for (auto &bucket : m_buckets) {
            if (bucket.work)
                bucket.work->wait();
            if (bucket.shmDone.valid())
                bucket.shmDone.wait();
        }
    } catch (const std::exception &) {
    }
    for (size_t i = 0; i < m_accumulators.size(); ++i)
        m_accumulators[i]->del_post_hook(m_hookKeys[i]);
}

std::vector<int64_t> GradientSync::bucketElements() const
{
    std::vector<int64_t> elements;
    for (const auto &bucket : m_buckets)
        elements.push_back(bucket.elements);
    return elements;
}

void GradientSync::useSharedMemory(std::unique_ptr<ShmAllReduce> shm)
{
    m_shm = std::move(shm);
    // Buckets now live in the shared segment: the process group's staging buffers are not needed.
    for (auto &bucket : m_buckets)
        bucket.flat = torch::Tensor();
}

bool GradientSync::singleDtype() const
{
    for (const auto &bucket : m_buckets) {
        if (m_parameters[bucket.parameters.front()].scalar_type() !=
            m_parameters[m_buckets.front().parameters.front()].scalar_type())
            return false;
    }
    return true;
}

void GradientSync::markReady(size_t parameter)
{
    if (!m_enabled || m_ready[parameter])
        return;
    m_active = true;
    m_ready[parameter] = true;
    Bucket &bucket = m_buckets[m_bucketOf[parameter]];
    if (++bucket.pending == bucket.parameters.size())
        launchReady();
}

void GradientSync::launchReady()
{
    // Launch in bucket order only, so every rank issues the same sequence of all-reduces.
    while (m_nextLaunch < m_buckets.size() &&
           m_buckets[m_nextLaunch].pending == m_buckets[m_nextLaunch].parameters.size()) {
        launch(m_buckets[m_nextLaunch]);
        ++m_nextLaunch;
    }
}

void GradientSync::launch(Bucket &bucket)
{
    torch::NoGradGuard noGrad;
    // With shared memory the bucket is this rank's slot in the segment: no staging copy.
    const size_t index = size_t(&bucket - m_buckets.data());
    torch::Tensor flat = m_shm ? m_shm->slot(index) : bucket.flat;
    int64_t offset = 0;
    for (size_t i : bucket.parameters) {
        const auto &parameter = m_parameters[i];
        const int64_t n = parameter.numel();
        auto slice = flat.narrow(0, offset, n);
        const auto &grad = parameter.grad();
        if (grad.defined())
            slice.copy_(grad.reshape({n}));
        else
            slice.zero_();
        offset += n;
    }
    if (m_shm && m_group->getSize() <= kDirectMeanRanks) {
        // The communication thread writes the mean straight into the gradients.
        std::vector<torch::Tensor> outputs;
        for (size_t i : bucket.parameters) {
            auto &parameter = m_parameters[i];
            if (!parameter.grad().defined() || !parameter.grad().is_contiguous())
                parameter.mutable_grad() =
                    parameter.grad().defined() ? parameter.grad().contiguous() : torch::empty_like(parameter);
            outputs.push_back(parameter.grad().view({-1}));
        }
        bucket.shmDone = m_shm->submitMean(index, std::move(outputs));
        bucket.direct = true;
    } else if (m_shm) {
        bucket.shmDone = m_shm->submit(index); // averaged when read back in finish()
    } else {
        bucket.flat.div_(m_group->getSize());
        std::vector<torch::Tensor> tensors{bucket.flat};
        bucket.work = m_group->allreduce(tensors);
    }
    bucket.launched = true;
}

void GradientSync::finish()
{
    if (!m_active)
        return;
    // Parameters that got no gradient this step (unused in forward) still take part, as zeros.
    for (auto &bucket : m_buckets)
        bucket.pending = bucket.parameters.size();
    launchReady();
    torch::NoGradGuard noGrad;
    const double scale = 1.0 / double(m_group->getSize());
    for (size_t b = 0; b < m_buckets.size(); ++b) {
        Bucket &bucket = m_buckets[b];
        if (m_shm)
            bucket.shmDone.get(); // rethrows a peer's timeout
        else
            bucket.work->wait();
        if (bucket.direct) {
            bucket.shmDone = {};
            bucket.direct = false;
            bucket.launched = false;
            bucket.pending = 0;
            continue;
        }
        const torch::Tensor flat = m_shm ? m_shm->result(b) : bucket.flat;
        int64_t offset = 0;
        for (size_t i : bucket.parameters) {
            auto &parameter = m_parameters[i];
            const int64_t n = parameter.numel();
            auto slice = flat.narrow(0, offset, n).view(parameter.sizes());
            if (!parameter.grad().defined())
                parameter.mutable_grad() = torch::empty_like(parameter);
            // The sum becomes the mean in the same pass that writes the gradient back.
            if (m_shm)
                at::mul_out(parameter.mutable_grad(), slice, scale);
            else
                parameter.mutable_grad().copy_(slice);
            offset += n;
        }
        bucket.work.reset();
        bucket.shmDone = {};
        bucket.launched = false;
        bucket.pending = 0;
    }
    std::fill(m_ready.begin(), m_ready.end(), false);
    m_nextLaunch = 0;
    m_active = false;
}

} // namespace accel::runtime
