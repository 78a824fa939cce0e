// Joining the job: the c10d TCPStore (hosted by rank 0, or torchrun's agent store), every rank's
// announcement, the gloo or NCCL process group, and the device a rank computes on.
#include "core/runtime/accelerator_p.h"

#include "core/common/accelerateenv.h"
#include "core/common/loopbacksocket.h"
#include "core/common/runtoken.h"
#include "core/runtime/cudaplugin.h"
#include "core/runtime/signedstore.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <sstream>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace accel::runtime {

namespace {

using Clock = std::chrono::steady_clock;

std::string hostName()
{
    char buffer[256] = {};
    ::gethostname(buffer, sizeof(buffer) - 1);
    return buffer;
}

std::string formatSeconds(double seconds)
{
    std::ostringstream out;
    out << seconds << " s";
    return out.str();
}

std::string joinRanks(const std::vector<int> &ranks)
{
    std::string text;
    for (size_t i = 0; i < ranks.size(); ++i) {
        if (i == 8 && ranks.size() > 10) {
            text += ", ... (" + std::to_string(ranks.size()) + " in all)";
            break;
        }
        text += (i ? ", " : "") + std::to_string(ranks[i]);
    }
    return text;
}

} // namespace

// A gloo group of `size` ranks meeting in `store`, on the interface the environment chose (also
// hybrid sharding's machine and replica groups).
c10::intrusive_ptr<c10d::Backend> glooGroup(const Accelerator::Private &d, const c10::intrusive_ptr<c10d::Store> &store,
                                            int rank, int size)
{
    const DistributedEnv &env = d.env;
    auto glooOptions = c10d::ProcessGroupGloo::Options::create(toMs(d.options.collectiveTimeoutS));
    if (!env.glooInterface.empty())
        glooOptions->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(env.glooInterface));
    else if (isLoopbackAddress(env.masterAddr) && env.localWorldSize == env.worldSize)
        glooOptions->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else
        glooOptions->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    glooOptions->threads = 2;
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, glooOptions);
}

// The group for this rank's device: NCCL between GPUs (Accelerate's default backend for CUDA; the
// device is a GPU only when the CUDA plugin loaded), gloo otherwise.
c10::intrusive_ptr<c10d::Backend> deviceGroup(const Accelerator::Private &d,
                                              const c10::intrusive_ptr<c10d::Store> &store, int rank, int size)
{
    if (d.device.is_cuda())
        return cudaPlugin()->ncclGroup(store, rank, size, toMs(d.options.collectiveTimeoutS));
    return glooGroup(d, store, rank, size);
}

// Joins the store, announces this rank and waits until every rank has announced itself.
Result<void> rendezvous(Accelerator::Private &d)
{
    const DistributedEnv &env = d.env;
    const std::string where = env.masterAddr + ":" + std::to_string(env.masterPort);
    const double timeoutS = d.options.rendezvousTimeoutS;
    const auto deadline = Clock::now() + toMs(timeoutS);

    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = uint16_t(env.masterPort);
    storeOptions.isServer = env.rank == 0 && !env.useAgentStore;
    storeOptions.numWorkers = std::nullopt;
    storeOptions.waitWorkers = false;
    storeOptions.timeout = toMs(timeoutS);
    const auto cannotHost = [&](const std::string &reason) {
        return makeError(ErrorCode::Failed,
                         "rendezvous: rank 0 cannot host the store on port " + std::to_string(env.masterPort) +
                             " (is another job using MASTER_PORT=" + std::to_string(env.masterPort) + "?): " + reason,
                         where);
    };
    if (storeOptions.isServer && isLoopbackAddress(env.masterAddr)) {
        // Every rank reaches the store through loopback: listen there only, on the socket the
        // launcher has held on MASTER_PORT since it chose the port (so no other job can take the
        // port while this rank starts), else on a new one. The store owns a duplicate.
        int fd = -1;
        if (env.storeListenFd >= 0) {
            if (loopbackListeningPort(env.storeListenFd) != env.masterPort)
                return cannotHost(std::string(kStoreListenFdVariable) + "=" + std::to_string(env.storeListenFd) +
                                  " is not a socket listening on the loopback address at MASTER_PORT");
            ::fcntl(env.storeListenFd, F_SETFD, FD_CLOEXEC); // this rank's children do not inherit it
            fd = ::fcntl(env.storeListenFd, F_DUPFD_CLOEXEC, 3);
        } else {
            fd = listenOnLoopback(storeOptions.port, env.masterAddr == "::1");
        }
        if (fd < 0)
            return cannotHost(std::strerror(errno));
        storeOptions.masterListenFd = fd;
    }
    c10::intrusive_ptr<c10d::Store> base;
    try {
        base = c10::make_intrusive<c10d::TCPStore>(env.masterAddr, storeOptions);
    } catch (const std::exception &e) {
        std::string first = e.what();
        first = first.substr(0, first.find('\n'));
        if (storeOptions.isServer)
            return cannotHost(first);
        return makeError(ErrorCode::Timeout,
                         "rendezvous: rank " + std::to_string(env.rank) + " could not reach the store at " + where +
                             " within " + formatSeconds(timeoutS) +
                             (env.useAgentStore ? " (the launcher's agent store)" : " (hosted by rank 0)") +
                             "; missing ranks: 0" + (env.useAgentStore ? "" : " (the store host)") +
                             ". Check MASTER_ADDR/MASTER_PORT and that rank 0 started. (" + first + ")",
                         where);
    }
    c10::intrusive_ptr<c10d::Store> store = base;
    if (env.useAgentStore)
        store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restartCount), store);
    // Every rank of a run on one machine carries the supervisor's secret: sign every value, so that
    // another local user connecting to the loopback store cannot inject one (signedstore.h). The
    // nodes of a multi-machine run each have their own supervisor and secret.
    if (const char *secret = std::getenv(kRunTokenVariable); secret && *secret && env.localWorldSize == env.worldSize)
        store = c10::make_intrusive<SignedStore>(store, secret);
    store = c10::make_intrusive<c10d::PrefixStore>("accel", store);

    try {
        const std::string me = "rank/" + std::to_string(env.rank);
        const std::string value = hostName() + " pid " + std::to_string(::getpid());
        store->set(me, std::vector<uint8_t>(value.begin(), value.end()));
        std::vector<std::string> keys;
        for (int r = 0; r < env.worldSize; ++r)
            keys.push_back("rank/" + std::to_string(r));
        for (;;) {
            if (store->check(keys))
                break;
            if (Clock::now() >= deadline) {
                std::vector<int> missing;
                for (int r = 0; r < env.worldSize; ++r) {
                    if (!store->check({keys[size_t(r)]}))
                        missing.push_back(r);
                }
                return makeError(ErrorCode::Timeout,
                                 "rendezvous at " + where + " timed out after " + formatSeconds(timeoutS) +
                                     " on rank " + std::to_string(env.rank) + ": " + std::to_string(missing.size()) +
                                     " of WORLD_SIZE=" + std::to_string(env.worldSize) +
                                     " ranks never joined; missing ranks: " + joinRanks(missing),
                                 where);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    } catch (const std::exception &e) {
        return makeError(ErrorCode::Failed, std::string("rendezvous: the store connection failed: ") + e.what(), where);
    }
    d.store = store;

    try {
        const char *prefix = d.device.is_cuda() ? "nccl" : "gloo";
        d.group = deviceGroup(d, c10::make_intrusive<c10d::PrefixStore>(prefix, store), env.rank, env.worldSize);
        if (d.device.is_cuda())
            return {};
    } catch (const std::exception &e) {
        std::string first = e.what();
        return makeError(ErrorCode::Failed,
                         "rendezvous: gloo could not connect the ranks: " + first.substr(0, first.find('\n')), where);
    }
    return {};
}

// Why a rank computes on the CPU, for messages.
const char *cpuReason(const DistributedEnv &env)
{
    if (!cudaPlugin())
        return cudaPluginDetail().c_str();
    if (env.useCpu) {
        static const std::string useCpu = std::string(accelerateenv::kUseCpu) + " is set";
        return useCpu.c_str();
    }
    return "no GPU is visible to this process";
}

// The device of this rank, as Accelerate's PartialState picks it.
Result<torch::Device> pickDevice(const DistributedEnv &env)
{
    const CudaPlugin *cuda = cudaPlugin();
    if (cuda && !env.useCpu && torch::cuda::is_available()) {
        const int count = int(torch::cuda::device_count());
        if (env.localRank >= count)
            return makeError(
                ErrorCode::InvalidInput,
                "LOCAL_RANK=" + std::to_string(env.localRank) + " but only " + std::to_string(count) +
                    " GPU(s) are visible to this process (CUDA_VISIBLE_DEVICES=" +
                    (std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "not set") +
                    "); start at most one process per GPU or set gpu_ids",
                "LOCAL_RANK");
        cuda->setDevice(env.localRank);
        return torch::Device(torch::kCUDA, c10::DeviceIndex(env.localRank));
    }
    return torch::Device(torch::kCPU);
}

} // namespace accel::runtime
