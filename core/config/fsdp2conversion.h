// `accel config to-fsdp2`: rewrites an FSDP1 config block as FSDP2 (facts 4.5).
#pragma once

#include "core/config/clusterconfig.h"

#include <string>
#include <vector>

namespace accel::config {

struct Fsdp2Conversion {
    ClusterConfig config;           // the converted config
    bool changed = false;           // false when there was no FSDP block or it was already v2
    std::vector<std::string> notes; // warnings: dropped keys, why nothing changed
};

// Keeps auto_wrap_policy, cpu_ram_efficient_loading, offload_params, state_dict_type,
// transformer_layer_cls_to_wrap, min_num_params, activation_checkpointing, ignored_modules;
// maps fsdp_sharding_strategy / fsdp_reshard_after_forward to a bool (FULL_SHARD, HYBRID_SHARD ->
// true; SHARD_GRAD_OP, HYBRID_SHARD_ZERO2, NO_SHARD -> false; the explicit sharding strategy wins);
// drops backward_prefetch, sync_module_states, use_orig_params, forward_prefetch with a note;
// sets fsdp_version 2.
Fsdp2Conversion convertToFsdp2(const ClusterConfig &config);

} // namespace accel::config
