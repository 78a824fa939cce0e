#include "core/runtime/distributedenv.h"

#include "core/common/accelerateenv.h"
#include "core/common/cputopology.h"
#include "core/common/loopbacksocket.h"
#include "core/common/text.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <utility>

namespace accel::runtime {

namespace {

using text::lower;

bool truthy(const char *value)
{
    if (!value)
        return false;
    const std::string v = lower(value);
    return v == "1" || v == "true" || v == "yes" || v == "on";
}

// The first variable of the family that is set: {name, value}.
std::pair<std::string, const char *> firstSet(const DistributedEnv::Lookup &lookup,
                                              std::initializer_list<const char *> names)
{
    for (const char *name : names) {
        if (const char *value = lookup(name); value && *value)
            return {name, value};
    }
    return {{}, nullptr};
}

Result<int> parseInt(const std::string &name, const char *value, int minimum, int maximum)
{
    try {
        size_t used = 0;
        const long long parsed = std::stoll(value, &used);
        if (used != std::string(value).size() || parsed < minimum || parsed > maximum)
            throw std::out_of_range("range");
        return int(parsed);
    } catch (const std::exception &) {
        return makeError(ErrorCode::InvalidInput, "environment variable " + name + "=" + value +
                                                      ": expected an integer from " + std::to_string(minimum) + " to " +
                                                      std::to_string(maximum));
    }
}

// "no, fp16, bf16, fp8": the names of core/common/mixedprecision, for messages.
std::string mixedPrecisionChoices()
{
    std::string names;
    for (const std::string &name : mixedPrecisionNames())
        names += (names.empty() ? "" : ", ") + name;
    return names;
}

} // namespace

Result<MixedPrecision> parseMixedPrecision(const std::string &text)
{
    const std::string v = lower(text);
    if (v.empty())
        return MixedPrecision::No;
    if (auto precision = mixedPrecisionFromName(v))
        return *precision;
    return makeError(ErrorCode::InvalidInput,
                     "mixed precision: expected one of " + mixedPrecisionChoices() + "; got " + text);
}

Result<DistributedEnv> DistributedEnv::fromEnvironment(const Lookup &lookupIn)
{
    const Lookup lookup = lookupIn ? lookupIn : Lookup([](const char *name) { return std::getenv(name); });
    DistributedEnv env;

    constexpr int maxRanks = 1 << 20;
    if (auto [name, value] =
            firstSet(lookup, {"WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE"});
        value) {
        auto parsed = parseInt(name, value, 1, maxRanks);
        if (!parsed)
            return tl::unexpected(parsed.error());
        env.worldSize = *parsed;
    }
    if (auto [name, value] = firstSet(lookup, {"RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK"});
        value) {
        auto parsed = parseInt(name, value, 0, env.worldSize - 1);
        if (!parsed)
            return tl::unexpected(parsed.error());
        env.rank = *parsed;
    }
    bool localRankSet = false;
    if (auto [name, value] = firstSet(
            lookup, {"LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK"});
        value) {
        auto parsed = parseInt(name, value, 0, maxRanks);
        if (!parsed)
            return tl::unexpected(parsed.error());
        env.localRank = *parsed;
        localRankSet = true;
    } else {
        env.localRank = env.rank;
    }
    if (auto [name, value] = firstSet(
            lookup, {"LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE"});
        value) {
        auto parsed = parseInt(name, value, 1, maxRanks);
        if (!parsed)
            return tl::unexpected(parsed.error());
        env.localWorldSize = *parsed;
    } else {
        env.localWorldSize = env.worldSize;
    }
    env.distributed = env.worldSize > 1 || localRankSet;

    if (const char *addr = lookup("MASTER_ADDR"); addr && *addr)
        env.masterAddr = addr;
    else if (env.worldSize > env.localWorldSize)
        return makeError(ErrorCode::InvalidInput,
                         "MASTER_ADDR is not set but WORLD_SIZE=" + std::to_string(env.worldSize) +
                             " spans several machines (LOCAL_WORLD_SIZE=" + std::to_string(env.localWorldSize) +
                             "): set MASTER_ADDR to the address of rank 0's machine");
    if (const char *port = lookup("MASTER_PORT"); port && *port) {
        auto parsed = parseInt("MASTER_PORT", port, 1, 65535);
        if (!parsed)
            return tl::unexpected(parsed.error());
        env.masterPort = *parsed;
    }
    if (const char *fd = lookup(kStoreListenFdVariable); fd && *fd) {
        auto parsed = parseInt(kStoreListenFdVariable, fd, 0, 1 << 20);
        if (!parsed)
            return tl::unexpected(parsed.error());
        env.storeListenFd = *parsed;
    }
    env.useAgentStore = truthy(lookup("TORCHELASTIC_USE_AGENT_STORE"));
    if (const char *count = lookup("TORCHELASTIC_RESTART_COUNT"); count && *count) {
        auto parsed = parseInt("TORCHELASTIC_RESTART_COUNT", count, 0, 1 << 30);
        if (!parsed)
            return tl::unexpected(parsed.error());
        env.restartCount = *parsed;
    }
    env.useCpu = truthy(lookup(accelerateenv::kUseCpu));
    if (const char *mp = lookup(accelerateenv::kMixedPrecision); mp && *mp) {
        auto parsed = parseMixedPrecision(mp);
        if (!parsed)
            return makeError(ErrorCode::InvalidInput, std::string("environment variable ") +
                                                          accelerateenv::kMixedPrecision + "=" + mp +
                                                          ": expected one of " + mixedPrecisionChoices());
        env.mixedPrecision = *parsed;
    }
    if (const char *steps = lookup(accelerateenv::kGradientAccumulationSteps); steps && *steps) {
        auto parsed = parseInt(accelerateenv::kGradientAccumulationSteps, steps, 1, 1 << 30);
        if (!parsed)
            return tl::unexpected(parsed.error());
        env.gradientAccumulationSteps = *parsed;
    }
    env.debugMode = truthy(lookup(accelerateenv::kDebugMode));
    if (const char *threads = lookup("OMP_NUM_THREADS"); threads && *threads) {
        auto parsed = parseInt("OMP_NUM_THREADS", threads, 1, 1 << 16);
        if (!parsed)
            return tl::unexpected(parsed.error());
        env.numThreads = *parsed;
    } else {
        env.numThreads = threadsPerRank(localPhysicalCores(), env.localWorldSize);
    }
    if (const char *ifname = lookup("GLOO_SOCKET_IFNAME"); ifname)
        env.glooInterface = ifname;
    env.fp8 = Fp8Config::fromEnvironment(lookup);
    return env;
}

void DistributedEnv::exportCanonical() const
{
    ::setenv("RANK", std::to_string(rank).c_str(), 1);
    ::setenv("WORLD_SIZE", std::to_string(worldSize).c_str(), 1);
    ::setenv("LOCAL_RANK", std::to_string(localRank).c_str(), 1);
    ::setenv("LOCAL_WORLD_SIZE", std::to_string(localWorldSize).c_str(), 1);
}

} // namespace accel::runtime
