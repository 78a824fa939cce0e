#include "core/config/fsdp2conversion.h"

#include "core/common/fsdpvalues.h"
namespace accel::config {

namespace {

bool reshardsAfterForward(const std::string &strategy)
{
    const fsdp::ShardingStrategy *known = fsdp::findShardingStrategy(strategy);
    return known && known->reshardAfterForward;
}

} // namespace

Fsdp2Conversion convertToFsdp2(const ClusterConfig &config)
{
    Fsdp2Conversion result;
    result.config = config;
    const FsdpConfig &old = config.fsdp;
    if (old.isEmpty()) {
        result.notes.push_back("the config has no fsdp_config block; nothing to convert");
        return result;
    }
    if (old.version.value_or(1) == 2) {
        result.notes.push_back("fsdp_version is already 2; nothing to convert");
        return result;
    }
    FsdpConfig converted;
    converted.autoWrapPolicy = old.autoWrapPolicy;
    converted.cpuRamEfficientLoading = old.cpuRamEfficientLoading;
    converted.offloadParams = old.offloadParams;
    converted.stateDictType = old.stateDictType;
    converted.transformerLayerClsToWrap = old.transformerLayerClsToWrap;
    converted.minNumParams = old.minNumParams;
    converted.activationCheckpointing = old.activationCheckpointing;
    converted.ignoredModules = old.ignoredModules;
    converted.version = 2;

    // The sharding strategy, wherever FSDP1 kept it, becomes "reshard after forward".
    if (old.shardingStrategy) {
        converted.reshardAfterForward = BoolOrString(reshardsAfterForward(*old.shardingStrategy));
        result.notes.push_back(
            "fsdp_sharding_strategy " + *old.shardingStrategy +
            " becomes fsdp_reshard_after_forward: " + (reshardsAfterForward(*old.shardingStrategy) ? "true" : "false"));
    } else if (old.reshardAfterForward) {
        if (auto text = std::get_if<std::string>(&*old.reshardAfterForward)) {
            converted.reshardAfterForward = BoolOrString(reshardsAfterForward(*text));
            result.notes.push_back("fsdp_reshard_after_forward " + *text + " becomes " +
                                   (reshardsAfterForward(*text) ? "true" : "false"));
        } else {
            converted.reshardAfterForward = old.reshardAfterForward;
        }
    }
    if (converted.stateDictType == std::string(fsdp::kLocalStateDict)) {
        converted.stateDictType = fsdp::kShardedStateDict;
        result.notes.push_back(
            "fsdp_state_dict_type LOCAL_STATE_DICT does not exist in FSDP2; using SHARDED_STATE_DICT");
    }
    if (old.backwardPrefetch)
        result.notes.push_back("fsdp_backward_prefetch removed: FSDP2 does not use it");
    if (old.forwardPrefetch)
        result.notes.push_back("fsdp_forward_prefetch removed: not implemented for FSDP2");
    if (old.syncModuleStates)
        result.notes.push_back("fsdp_sync_module_states removed: obsolete in FSDP2");
    if (old.useOrigParams)
        result.notes.push_back("fsdp_use_orig_params removed: obsolete in FSDP2");
    result.config.fsdp = converted;
    result.changed = true;
    return result;
}

} // namespace accel::config
