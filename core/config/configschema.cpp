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

std::vector<std::string> allowedValues(const std::string &dottedKey)
{
    const KeyRule *rule = keyRule(dottedKey);
    if (!rule)
        return {};
    if (!rule->choices.values.empty())
        return rule->choices.values;
    std::vector<std::string> values;
    const Range &range = rule->range;
    if (rule->kind == KeyRule::Kind::Integer && range.minimum && range.maximum && *range.maximum - *range.minimum < 16)
        for (std::int64_t value = *range.minimum; value <= *range.maximum; ++value)
            values.push_back(std::to_string(value));
    return values;
}

const Choices &anyText()
{
    static const Choices any;
    return any;
}

const std::vector<std::string> &mixedPrecisionNames()
{
    return accel::mixedPrecisionNames();
}

std::vector<std::string> valuesIn(const std::vector<PlacedValue> &table, Place place)
{
    std::vector<std::string> names;
    for (const PlacedValue &value : table)
        if (value.places & place)
            names.emplace_back(value.name);
    return names;
}

// Accelerate's DynamoBackend enum (a config's values), the backends its questionnaire offers and
// those its launcher's --dynamo_backend takes (lower case).
const std::vector<PlacedValue> &dynamoBackendTable()
{
    static const std::vector<PlacedValue> table{
        {"NO", InConfig | LaunchFlag},
        {"EAGER", Everywhere},
        {"AOT_EAGER", Everywhere},
        {"INDUCTOR", Everywhere},
        {"AOT_TS_NVFUSER", Everywhere},
        {"NVPRIMS_NVFUSER", Everywhere},
        {"CUDAGRAPHS", Everywhere},
        {"OFI", Everywhere},
        {"FX2TRT", Everywhere},
        {"ONNXRT", Everywhere},
        {"TENSORRT", Everywhere},
        {"AOT_TORCHXLA_TRACE_ONCE", Everywhere},
        {"TORCHXLA_TRACE_ONCE", Everywhere},
        {"IPEX", LaunchFlag},
        {"TVM", Everywhere},
        {"HPU_BACKEND", InConfig | LaunchFlag},
        {"NEURON", InConfig},
    };
    return table;
}

// torch.compile's modes: a config may hold the fourth, which the questionnaire and the launch
// flag do not offer.
const std::vector<PlacedValue> &dynamoModeTable()
{
    static const std::vector<PlacedValue> table{
        {"default", Everywhere},
        {"reduce-overhead", Everywhere},
        {"max-autotune", Everywhere},
        {"max-autotune-no-cudagraphs", InConfig},
    };
    return table;
}

const std::vector<std::string> &dynamoBackends()
{
    static const std::vector<std::string> names = valuesIn(dynamoBackendTable(), InConfig);
    return names;
}

const std::vector<std::string> &dynamoModes()
{
    static const std::vector<std::string> names = valuesIn(dynamoModeTable(), InConfig);
    return names;
}

std::string joined(const std::vector<std::string> &values, const char *separator)
{
    std::string out;
    for (const std::string &value : values) {
        if (!out.empty())
            out += separator;
        out += value;
    }
    return out;
}

const std::vector<std::string> &distributedTypeNames(bool sageMaker)
{
    // The enum's text forms (clusterconfig.cpp): a local machine's types are No .. MegatronLm, in
    // the enum's order; SageMaker's are NO, DATA_PARALLEL and MODEL_PARALLEL.
    static const std::vector<std::string> local = [] {
        std::vector<std::string> names;
        for (int type = int(DistributedType::No); type <= int(DistributedType::MegatronLm); ++type)
            names.emplace_back(toString(DistributedType(type)));
        return names;
    }();
    static const std::vector<std::string> sage{toString(DistributedType::No), toString(DistributedType::DataParallel),
                                               toString(DistributedType::ModelParallel)};
    return sageMaker ? sage : local;
}

const std::vector<std::string> &computeEnvironmentNames()
{
    static const std::vector<std::string> names{toString(ComputeEnvironment::LocalMachine),
                                                toString(ComputeEnvironment::AmazonSageMaker)};
    return names;
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
