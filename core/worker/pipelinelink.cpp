#include "core/worker/pipelinelink.h"

#include "core/common/loopbacksocket.h"
#include "core/common/runtoken.h"
#include "core/runtime/signedstore.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdlib>

namespace accel::worker {

Result<std::unique_ptr<PipelineLink>> PipelineLink::connect(const runtime::DistributedEnv &env, double timeoutS)
{
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeoutS * 1000));
    const std::string where = env.masterAddr + ":" + std::to_string(env.masterPort);
    try {
        // The run's store, layered as the runtime's rendezvous layers it (agent prefix, the run's
        // signature on one machine, "accel"), under a prefix of its own.
        c10d::TCPStoreOptions options;
        options.port = static_cast<uint16_t>(env.masterPort);
        options.isServer = false;
        options.waitWorkers = false;
        options.timeout = timeout;
        c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::TCPStore>(env.masterAddr, options);
        if (env.useAgentStore)
            store =
                c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restartCount), store);
        if (const char *secret = std::getenv(kRunTokenVariable);
            secret && *secret && env.localWorldSize == env.worldSize)
            store = c10::make_intrusive<runtime::SignedStore>(store, secret);
        store = c10::make_intrusive<c10d::PrefixStore>("accel", store);
        store = c10::make_intrusive<c10d::PrefixStore>("pipeline", store);
        auto gloo = c10d::ProcessGroupGloo::Options::create(timeout);
        if (!env.glooInterface.empty())
            gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(env.glooInterface));
        else if (isLoopbackAddress(env.masterAddr) && env.localWorldSize == env.worldSize)
            gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
        else
            gloo->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
        gloo->threads = 2;
        auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.worldSize, gloo);
        return std::unique_ptr<PipelineLink>(new PipelineLink(group));
    } catch (const std::exception &e) {
        std::string first = e.what();
        return makeError(ErrorCode::Failed,
                         "pipeline: the stages could not connect: " + first.substr(0, first.find('\n')), where);
    }
}

PipelineLink::~PipelineLink()
{
    try {
        flush();
    } catch (const std::exception &) {
    }
}

void PipelineLink::send(const at::Tensor &tensor, int toRank, int tag)
{
    std::vector<at::Tensor> tensors{tensor.contiguous()};
    std::lock_guard<std::mutex> lock(m_mutex); // posting is serialised; the transfers overlap
    auto work = m_group->send(tensors, toRank, tag);
    // Forget the sends gloo has finished with.
    std::vector<Pending> still;
    for (auto &p : m_pending)
        if (!p.work->isCompleted())
            still.push_back(std::move(p));
        else
            p.work->wait(); // rethrows a failure
    m_pending = std::move(still);
    m_pending.push_back({work, tensors[0]});
}

at::Tensor PipelineLink::recv(at::Tensor buffer, int fromRank, int tag)
{
    std::vector<at::Tensor> tensors{buffer};
    c10::intrusive_ptr<c10d::Work> work;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        work = m_group->recv(tensors, fromRank, tag);
    }
    work->wait();
    return buffer;
}

void PipelineLink::flush()
{
    std::vector<Pending> pending;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        pending.swap(m_pending);
    }
    for (auto &p : pending)
        p.work->wait();
}

} // namespace accel::worker
