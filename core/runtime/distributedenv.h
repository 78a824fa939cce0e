// The process environment as a rank of a job sees it: who am I (rank, world size, local rank),
// where is the rendezvous (MASTER_ADDR/MASTER_PORT or the launcher's agent store) and which
// Accelerate settings the launcher exported. The same variables are set by `accel launch`,
// `accelerate launch`, torchrun and MPI launchers, so one worker binary runs under all of them.
#pragma once

#include "core/common/distributeddefaults.h"
#include "core/common/mixedprecision.h"

#include "core/common/result.h"
#include "core/plan/fp8config.h"

#include <functional>
#include <string>

namespace accel::runtime {

using accel::MixedPrecision; // core/common/mixedprecision.h
using accel::mixedPrecisionName;
// ACCELERATE_MIXED_PRECISION's value, any case; "" is no.
Result<MixedPrecision> parseMixedPrecision(const std::string &text);

struct DistributedEnv {
    int rank = 0;
    int worldSize = 1;
    int localRank = 0;
    int localWorldSize = 1;
    bool distributed = false; // more than one process, or LOCAL_RANK set
    std::string masterAddr = "127.0.0.1";
    int masterPort = kDefaultMainProcessPort;
    int storeListenFd = -1;     // ACCEL_STORE_LISTEN_FD: the launcher's listening socket for rank 0's store
    bool useAgentStore = false; // TORCHELASTIC_USE_AGENT_STORE=True: the launcher hosts the store
    int restartCount = 0;       // TORCHELASTIC_RESTART_COUNT
    bool useCpu = false;        // ACCELERATE_USE_CPU
    MixedPrecision mixedPrecision = MixedPrecision::No; // ACCELERATE_MIXED_PRECISION
    int gradientAccumulationSteps = 0;                  // ACCELERATE_GRADIENT_ACCUMULATION_STEPS, 0 = not set
    bool debugMode = false;                             // ACCELERATE_DEBUG_MODE
    int numThreads = 0;                                 // OMP_NUM_THREADS, else physical cores / local world size
    std::string glooInterface;                          // GLOO_SOCKET_IFNAME
    // ACCELERATE_FP8_* (precision/fp8config.h); read whatever the precision, an error only matters
    // (and is reported by the Accelerator) when the run trains in fp8.
    Result<Fp8Config> fp8;

    using Lookup = EnvLookup;

    // Reads the variables the way Accelerate's PartialState does (first set variable of each
    // family wins: RANK|PMI_RANK|OMPI_COMM_WORLD_RANK|MV2_COMM_WORLD_RANK, ...). `lookup`
    // defaults to getenv. Errors name the variable and its bad value.
    static Result<DistributedEnv> fromEnvironment(const Lookup &lookup = {});

    // Writes RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE back into the process environment,
    // as Accelerate does, so libraries started later see the canonical names.
    void exportCanonical() const;
};

} // namespace accel::runtime
