#include "core/config/configschema.h"

#include <algorithm>
#include <map>

namespace accel::config::schema {

namespace {

// Collects key names.
struct KeyCollector {
    std::vector<std::string> keys;
    void add(const char *key) { keys.emplace_back(key); }
    void flag(const char *key, std::optional<bool> &) { add(key); }
    void integer(const char *key, std::optional<std::int64_t> &, Range) { add(key); }
    void number(const char *key, std::optional<double> &) { add(key); }
    void text(const char *key, std::optional<std::string> &, const Choices &) { add(key); }
    void boolOrText(const char *key, std::optional<BoolOrString> &, const Choices &) { add(key); }
    void textList(const char *key, std::optional<std::vector<std::string>> &) { add(key); }
    void flagList(const char *key, std::optional<std::vector<bool>> &, size_t, std::optional<BoolOrString> &)
    {
        add(key);
    }
};

// Collects each key's rule under a prefix ("" or "fsdp_config.").
struct RuleCollector {
    std::map<std::string, KeyRule> &rules;
    std::string prefix;
    void add(const char *key, KeyRule::Kind kind, const Choices &choices = anyText(), Range range = {})
    {
        rules[prefix + key] = KeyRule{kind, choices, range};
    }
    void flag(const char *key, std::optional<bool> &) { add(key, KeyRule::Kind::Flag); }
    void integer(const char *key, std::optional<std::int64_t> &, Range range)
    {
        add(key, KeyRule::Kind::Integer, anyText(), range);
    }
    void number(const char *key, std::optional<double> &) { add(key, KeyRule::Kind::Number); }
    void text(const char *key, std::optional<std::string> &, const Choices &choices)
    {
        add(key, KeyRule::Kind::Text, choices);
    }
    void boolOrText(const char *key, std::optional<BoolOrString> &, const Choices &choices)
    {
        add(key, KeyRule::Kind::BoolOrText, choices);
    }
    void textList(const char *key, std::optional<std::vector<std::string>> &) { add(key, KeyRule::Kind::TextList); }
    void flagList(const char *key, std::optional<std::vector<bool>> &, size_t, std::optional<BoolOrString> &)
    {
        add(key, KeyRule::Kind::FlagList);
    }
};

} // namespace

const KeyRule *keyRule(const std::string &dottedKey)
{
    static const std::map<std::string, KeyRule> rules = [] {
        std::map<std::string, KeyRule> out;
        ClusterConfig config;
        RuleCollector top{out, ""};
        visitClusterScalars(config, top);
        forEachBlock(config, [&out](const char *block, auto &&visit) {
            RuleCollector nested{out, std::string(block) + "."};
            visit(nested);
        });
        return out;
    }();
    const auto it = rules.find(dottedKey);
    return it == rules.end() ? nullptr : &it->second;
}

const Choices &anyText()
{
    static const Choices any;
    return any;
}

const std::vector<std::string> &dynamoBackends()
{
    static const std::vector<std::string> names{
        "NO",
        "EAGER",
        "AOT_EAGER",
        "INDUCTOR",
        "AOT_TS_NVFUSER",
        "NVPRIMS_NVFUSER",
        "CUDAGRAPHS",
        "OFI",
        "FX2TRT",
        "ONNXRT",
        "TENSORRT",
        "AOT_TORCHXLA_TRACE_ONCE",
        "TORCHXLA_TRACE_ONCE",
        "TVM",
        "HPU_BACKEND",
        "NEURON",
    };
    return names;
}

const std::vector<std::string> &fsdpShardingStrategies()
{
    static const std::vector<std::string> names{"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD",
                                                "HYBRID_SHARD_ZERO2"};
    return names;
}

const std::vector<std::string> &fsdpStateDictTypes()
{
    static const std::vector<std::string> names{"FULL_STATE_DICT", "LOCAL_STATE_DICT", "SHARDED_STATE_DICT"};
    return names;
}

const std::vector<std::string> &distributedTypeNames(bool sageMaker)
{
    static const std::vector<std::string> local{
        "NO",        "MULTI_CPU", "MULTI_GPU",    "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA",
        "MULTI_XPU", "MULTI_HPU", "MULTI_NEURON", "DEEPSPEED", "FSDP",      "XLA",        "MEGATRON_LM",
    };
    static const std::vector<std::string> sage{"NO", "DATA_PARALLEL", "MODEL_PARALLEL"};
    return sageMaker ? sage : local;
}

std::vector<std::string> topLevelKeys(bool sageMaker)
{
    ClusterConfig config;
    config.computeEnvironment = sageMaker ? ComputeEnvironment::AmazonSageMaker : ComputeEnvironment::LocalMachine;
    KeyCollector collector;
    if (sageMaker) {
        visitSageMakerScalars(config, collector);
        collector.keys.emplace_back("additional_args");
    } else {
        visitClusterScalars(config, collector);
    }
    forEachBlock(config, [&](const char *key, auto &&) { collector.keys.emplace_back(key); });
    for (const char *key : {"compute_environment", "distributed_type", "mixed_precision"})
        collector.keys.emplace_back(key);
    std::sort(collector.keys.begin(), collector.keys.end());
    return collector.keys;
}

std::vector<std::string> blockKeys(const std::string &block)
{
    ClusterConfig config;
    KeyCollector collector;
    forEachBlock(config, [&](const char *key, auto &&visit) {
        if (block == key)
            visit(collector);
    });
    if (block == "megatron_lm_config")
        for (const std::string &key : megatronLmExtraKeys())
            collector.keys.push_back(key);
    std::sort(collector.keys.begin(), collector.keys.end());
    return collector.keys;
}

std::string blockPrefix(const std::string &block)
{
    if (block == "fsdp_config")
        return "fsdp_";
    if (block == "dynamo_config")
        return "dynamo_";
    return {};
}

} // namespace accel::config::schema
