// The point-to-point link between the stages of a pipeline: a gloo group of every rank over the
// run's store (the c10d TCPStore rank 0 hosts, its values signed with the run's secret as the
// runtime's own group is), used only for send / recv. Sends are asynchronous (the link keeps the
// tensor until gloo is done with it), so that a stage never waits for its successor to be ready
// and the stages can pass micro-batches both ways without a cycle of blocked sends. Several
// threads may use one link with different tags. Includes libtorch.
#pragma once

#include "core/common/result.h"
#include "core/runtime/distributedenv.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <memory>
#include <mutex>
#include <vector>

namespace accel::worker {

class PipelineLink {
public:
    // Every rank calls it after the Accelerator has met the others (the store is up).
    static Result<std::unique_ptr<PipelineLink>> connect(const runtime::DistributedEnv &env, double timeoutS);
    ~PipelineLink();

    void send(const at::Tensor &tensor, int toRank, int tag);
    // Fills `buffer` (its shape and dtype are the message's) and returns it.
    at::Tensor recv(at::Tensor buffer, int fromRank, int tag);
    // Waits for every send (rethrows a failed one).
    void flush();

private:
    explicit PipelineLink(c10::intrusive_ptr<c10d::Backend> group) : m_group(std::move(group)) {}
    c10::intrusive_ptr<c10d::Backend> m_group;
    std::mutex m_mutex;
    struct Pending {
        c10::intrusive_ptr<c10d::Work> work;
        at::Tensor tensor;
    };
    std::vector<Pending> m_pending;
};

} // namespace accel::worker
