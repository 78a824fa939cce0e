// The values Accelerate's FSDP settings take (fsdp_config / the FSDP_* variables), declared once.
// The config schema (validation, the questionnaire, the launch flags, the studio's form), the
// sharding plan that reads the FSDP_* variables a rank receives, and the native key table's prose
// read these lists. Torch-free: core/plan does not link the config library.
#pragma once

#include <string>
#include <vector>

namespace accel::fsdp {

// An FSDP1 sharding strategy and what it shards, as ZeRO stages (0 nothing, 3 also parameters).
struct ShardingStrategy {
    const char *name;
    int stage;
    bool reshardAfterForward; // stage 3: free the gathered parameters after forward
    bool hybrid;              // shard inside a machine, replicate across machines
};

// Accelerate's order: FSDP_SHARDING_STRATEGY also takes the 1-based position ("1" = FULL_SHARD).
const std::vector<ShardingStrategy> &shardingStrategyTable();
const ShardingStrategy *findShardingStrategy(const std::string &name); // exact name; nullptr if unknown

// The names of each setting's values, in the order Accelerate lists them.
const std::vector<std::string> &shardingStrategies();
const std::vector<std::string> &autoWrapPolicies();
const std::vector<std::string> &backwardPrefetchModes();
const std::vector<std::string> &stateDictTypes();
const std::vector<std::string> &fsdp2StateDictTypes(); // what fsdp_version 2 takes, its default first

// The values the plan and the defaults name (the plan maps them to what it does).
inline constexpr const char *kFullShard = "FULL_SHARD";
inline constexpr const char *kShardGradOp = "SHARD_GRAD_OP";
inline constexpr const char *kBackwardPre = "BACKWARD_PRE";
inline constexpr const char *kBackwardPost = "BACKWARD_POST";
inline constexpr const char *kTransformerBasedWrap = "TRANSFORMER_BASED_WRAP";
inline constexpr const char *kSizeBasedWrap = "SIZE_BASED_WRAP";
inline constexpr const char *kNoWrap = "NO_WRAP";
inline constexpr const char *kFullStateDict = "FULL_STATE_DICT";
inline constexpr const char *kShardedStateDict = "SHARDED_STATE_DICT";
inline constexpr const char *kLocalStateDict = "LOCAL_STATE_DICT";

// fsdp_min_num_params when none is given (Accelerate's 1e8): the questionnaire's default answer,
// the launch flag's default and the FSDP_MIN_NUM_PARAMS accel launch exports without the key.
inline constexpr const char *kDefaultMinNumParams = "100000000";

bool isOneOf(const std::vector<std::string> &values, const std::string &value);
// "one of A, B, C": how a refusal names the valid values.
std::string oneOf(const std::vector<std::string> &values);

} // namespace accel::fsdp
