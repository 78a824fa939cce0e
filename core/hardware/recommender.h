// Proposes an Accelerate config for a host from its report (local or parsed from another host's
// JSON): distributed type and process count, the mixed precision the hardware really supports,
// gpu_ids, threads per process and environment fixes, each with the reason a person can read.
#pragma once

#include "core/hardware/hardwarereport.h"

#include <string>
#include <utility>
#include <vector>

namespace accel::hardware {

struct RecommendationReason {
    std::string key; // an Accelerate config key ("mixed_precision") or an environment variable
    std::string text;
};

struct RecommendedConfig {
    // Accelerate key names and values as they appear in default_config.yaml.
    std::string distributedType = "NO"; // distributed_type: NO | MULTI_CPU | MULTI_GPU
    int numProcesses = 1;               // num_processes
    int numMachines = 1;                // num_machines
    std::string mixedPrecision = "no";  // mixed_precision: no | fp16 | bf16
    std::string gpuIds;                 // gpu_ids: "all"; "" on CPU-only hosts (key not written)
    bool useCpu = false;                // use_cpu
    // What the hardware can run, best last: a subset of {"no", "fp16", "bf16", "fp8"}.
    std::vector<std::string> supportedPrecisions;
    // Not config keys: threads per process (`--num_cpu_threads_per_process`) and environment
    // variables to export before launching, e.g. {"OMP_NUM_THREADS","16"}, {"NCCL_P2P_DISABLE","1"}.
    int threadsPerProcess = 1;
    std::vector<std::pair<std::string, std::string>> environment;
    std::vector<RecommendationReason> reasons; // one per key above, in the order decided
    std::vector<std::string> warnings;         // things the user should know (mixed GPU models, ...)

    // The reason recorded for `key`, "" when none.
    std::string reasonFor(const std::string &key) const;
    // The recommended value of an environment variable, "" when not recommended.
    std::string environmentValue(const std::string &name) const;
};

RecommendedConfig recommendConfig(const HardwareReport &report);

// The recommended config as default_config.yaml text, the way Accelerate writes it (keys sorted,
// 'NO'/'no' quoted). With withComments, a header of "# ..." lines carries the reasons, threads and
// environment. The result loads in Accelerate and in accel::config.
std::string recommendedConfigYaml(const RecommendedConfig &config, bool withComments = true);
// Only the "# ..." header lines of recommendedConfigYaml (for callers that serialise the keys
// with accel::config).
std::string recommendationComments(const RecommendedConfig &config);

// {"schema": "accel.env-recommendation", "version": 1, "config": {...Accelerate keys...},
//  "supported_mixed_precision": [...], "threads_per_process", "environment": {...},
//  "reasons": [{"key", "text"}], "warnings": [...], "yaml": "..."} (docs/env-json.md).
std::string recommendationToJson(const RecommendedConfig &config, int indent = 2);

// Accelerate's NCCL check: true when `driver` ("550.40.07") is older than 550.40.07, the first
// driver with working peer-to-peer on RTX 40 series cards. Unknown ("") counts as older.
bool driverLacksRtx40P2pFix(const std::string &driver);

} // namespace accel::hardware
