// Checks a parsed config the way Accelerate's launcher would (and more): cross-field rules that
// make a launch fail, and warnings for keys that Accelerate silently ignores.
#pragma once

#include "core/config/clusterconfig.h"
#include "core/config/diagnostic.h"

#include <cstdint>
#include <optional>
#include <string>

namespace accel::config {

// Errors (the launch would fail or do something else than written) and warnings (a key has no
// effect), in file order. Lines come from config.source when the config was parsed from a file.
// Rules include: machine_rank < num_machines; main_process_ip for multi-node; num_processes
// divisible by num_machines; MULTI_GPU-like with one machine and one process; fp8_config only
// with mixed_precision fp8; FSDP keys valid for fsdp_version; DeepSpeed json file together with
// inline keys that the child rejects; parallelism_config only with FSDP2; blocks that do not
// belong to the distributed_type. Warnings for rdzv_backend/same_network/enable_cpu_affinity/
// downcast_bf16 being ignored by the launcher, fp8 keys that never reach the recipe, the FSDP1
// strategy stored in fsdp_reshard_after_forward, DeepSpeed NVMe paths not exported, ...
Diagnostics validate(const ClusterConfig &config);

// The cross-field rules accel launch applies to its merged flags and config as well as validate()
// to a file: each gives what is wrong with the key it is named after, or nothing.
namespace rules {
std::optional<std::string> machineRank(std::int64_t rank, std::int64_t machines);
std::optional<std::string> mainProcessIp(bool given, std::int64_t machines);
std::optional<std::string> numProcesses(std::int64_t processes, std::int64_t machines); // the divisibility
std::optional<std::string> parallelismConfig(bool fsdp, std::int64_t fsdpVersion);
} // namespace rules

} // namespace accel::config
