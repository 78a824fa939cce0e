// A native job's start-up check of the settings `accel launch` exported (docs/native-keys.md):
// every variable the table of native keys (core/config/nativekeys.h) says the ranks refuse is
// refused by name before anything starts, every one it says is meaningless for C++ is noted, and
// what the table leaves to this check is done here: distributed_type MEGATRON_LM refused as a
// whole, the parallelism_config sizes held against the world size (the device mesh),
// a DeepSpeed file's keys and its fp16 / bf16 switches. Torch-free.
#pragma once

#include "core/common/result.h"

#include <functional>
#include <string>
#include <vector>

namespace accel::worker {

// getenv-like: null for an unset variable.
using VariableLookup = std::function<const char *(const char *)>;

struct RankPlace {
    int worldSize = 1;
    int localRank = 0;
    int localWorldSize = 1;
};

struct NativeSettings {
    std::vector<std::string> notes; // for rank 0 to print, one "note: " line each
    // The precision the job trains in when a DeepSpeed file's fp16 / bf16 switch decides it; empty:
    // the job's own (training.mixed_precision, else ACCELERATE_MIXED_PRECISION).
    std::string mixedPrecision;
    bool cpuAffinity = false; // ACCELERATE_CPU_AFFINITY: pin the rank to its NUMA node's CPUs
};

// `jobPrecision`: the job file's training.mixed_precision ("" when unset).
Result<NativeSettings> checkNativeSettings(const VariableLookup &lookup, const RankPlace &place,
                                           const std::string &jobPrecision);

} // namespace accel::worker
