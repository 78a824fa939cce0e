// Kept over c10d's Reducer because the bench (tests/bench/runtime) measures it ahead of PyTorch's
// DDP, which is the Reducer over gloo (docs/platform.md).
#include "core/runtime/strategy/gradientsync.h"

#include "core/runtime/strategy/gradienthooks.h"

namespace accel::runtime {

GradientSync::GradientSync(Collectives &group, std::vector<torch::Tensor> parameters, int64_t bucketCapBytes)
    : m_group(group), m_parameters(std::move(parameters))
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
        currentBytes += bytes;
    }
    if (!current.parameters.empty())
        m_buckets.push_back(std::move(current));
    for (size_t b = 0; b < m_buckets.size(); ++b) {
        for (size_t i : m_buckets[b].parameters)
            m_bucketOf[i] = b;
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
    for (auto &bucket : m_buckets) {
        try {
            if (bucket.done)
                bucket.done();
        } catch (const std::exception &) {
        }
    }
    for (size_t i = 0; i < m_accumulators.size(); ++i)
        m_accumulators[i]->del_post_hook(m_hookKeys[i]);
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
    // Launch in bucket order only, so every rank starts the same sequence of means.
    while (m_nextLaunch < m_buckets.size() &&
           m_buckets[m_nextLaunch].pending == m_buckets[m_nextLaunch].parameters.size()) {
        launch(m_buckets[m_nextLaunch]);
        ++m_nextLaunch;
    }
}

void GradientSync::launch(Bucket &bucket)
{
    torch::NoGradGuard noGrad;
    // The gradients themselves, contiguous; a parameter without one (unused in forward) takes part
    // as zeros.
    std::vector<torch::Tensor> gradients;
    for (size_t i : bucket.parameters) {
        auto &parameter = m_parameters[i];
        if (!parameter.grad().defined())
            parameter.mutable_grad() = torch::zeros_like(parameter);
        else if (!parameter.grad().is_contiguous())
            parameter.mutable_grad() = parameter.grad().contiguous();
        gradients.push_back(parameter.grad());
    }
    bucket.done = m_group.allReduceMeanAsync(std::move(gradients));
}

void GradientSync::finish()
{
    if (!m_active)
        return;
    // Parameters that got no gradient this step (unused in forward) still take part, as zeros.
    for (auto &bucket : m_buckets)
        bucket.pending = bucket.parameters.size();
    launchReady();
    for (auto &bucket : m_buckets) {
        Collectives::Pending done = std::move(bucket.done);
        bucket.done = nullptr;
        bucket.pending = 0;
        done(); // rethrows a peer's timeout
    }
    std::fill(m_ready.begin(), m_ready.end(), false);
    m_nextLaunch = 0;
    m_active = false;
}

} // namespace accel::runtime
