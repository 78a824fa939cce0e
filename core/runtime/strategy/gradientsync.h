// Bucketed gradient mean overlapped with backward, our counterpart of c10d::Reducer: grad-accumulator
// post hooks mark parameters ready; a bucket (up to bucketCapBytes, parameters in reverse
// registration order, as gradients arrive; one dtype per bucket) starts its mean on the group's
// Collectives as soon as it is full, in bucket order on every rank; finish() waits for every bucket.
// Through shared memory the gradients are copied straight into the segment and the mean written
// straight back into them; over the process group they travel in a staging buffer.
// Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/runtime/strategy/collectives.h"

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace accel::runtime {

class GradientSync {
public:
    GradientSync(Collectives &group, std::vector<torch::Tensor> parameters, int64_t bucketCapBytes);
    ~GradientSync();
    GradientSync(const GradientSync &) = delete;
    GradientSync &operator=(const GradientSync &) = delete;

    void setEnabled(bool enabled) { m_enabled = enabled; } // false while accumulating (no_sync)
    void finish();                                         // after backward
    size_t bucketCount() const { return m_buckets.size(); }
    std::string transport() const { return m_group.transport(); }

private:
    struct Bucket {
        std::vector<size_t> parameters;
        size_t pending = 0;
        Collectives::Pending done; // set once launched
    };
    void markReady(size_t parameter);
    void launchReady();
    void launch(Bucket &bucket);

    Collectives &m_group;
    std::vector<torch::Tensor> m_parameters;
    std::vector<size_t> m_bucketOf;
    std::vector<bool> m_ready;
    std::vector<Bucket> m_buckets;
    std::vector<std::shared_ptr<torch::autograd::Node>> m_accumulators;
    std::vector<uintptr_t> m_hookKeys;
    size_t m_nextLaunch = 0;
    bool m_enabled = true;
    bool m_active = false;
};

} // namespace accel::runtime
