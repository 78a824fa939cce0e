#include "core/common/fsdpvalues.h"

#include <algorithm>

namespace accel::fsdp {

namespace {

std::vector<std::string> namesOf(const std::vector<ShardingStrategy> &table)
{
    std::vector<std::string> names;
    for (const ShardingStrategy &strategy : table)
        names.emplace_back(strategy.name);
    return names;
}

} // namespace

const std::vector<ShardingStrategy> &shardingStrategyTable()
{
    // SHARD_GRAD_OP keeps the gathered parameters from forward until the end of backward.
    static const std::vector<ShardingStrategy> table{
        {kFullShard, 3, true, false},    {kShardGradOp, 3, false, false},        {"NO_SHARD", 0, false, false},
        {"HYBRID_SHARD", 3, true, true}, {"HYBRID_SHARD_ZERO2", 3, false, true},
    };
    return table;
}

const ShardingStrategy *findShardingStrategy(const std::string &name)
{
    for (const ShardingStrategy &strategy : shardingStrategyTable()) {
        if (name == strategy.name)
            return &strategy;
    }
    return nullptr;
}

const std::vector<std::string> &shardingStrategies()
{
    static const std::vector<std::string> names = namesOf(shardingStrategyTable());
    return names;
}

const std::vector<std::string> &autoWrapPolicies()
{
    static const std::vector<std::string> names{kTransformerBasedWrap, kSizeBasedWrap, kNoWrap};
    return names;
}

const std::vector<std::string> &backwardPrefetchModes()
{
    static const std::vector<std::string> names{kBackwardPre, "BACKWARD_POST", "NO_PREFETCH"};
    return names;
}

const std::vector<std::string> &stateDictTypes()
{
    static const std::vector<std::string> names{kFullStateDict, kLocalStateDict, kShardedStateDict};
    return names;
}

const std::vector<std::string> &fsdp2StateDictTypes()
{
    static const std::vector<std::string> names{kShardedStateDict, kFullStateDict};
    return names;
}

bool isOneOf(const std::vector<std::string> &values, const std::string &value)
{
    return std::find(values.begin(), values.end(), value) != values.end();
}

std::string oneOf(const std::vector<std::string> &values)
{
    std::string text = "one of ";
    for (size_t i = 0; i < values.size(); ++i)
        text += (i ? ", " : "") + values[i];
    return text;
}

} // namespace accel::fsdp
