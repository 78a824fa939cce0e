// Checks a parsed config the way Accelerate's launcher would (and more): cross-field rules that
// make a launch fail, and warnings for keys that Accelerate silently ignores.
#pragma once

#include "core/config/clusterconfig.h"
#include "core/config/diagnostic.h"

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

} // namespace accel::config
