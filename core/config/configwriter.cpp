// ClusterConfig -> ConfigValue: the dict Accelerate's to_dict() produces (absent keys and empty
// blocks left out, enums as their text).
#include "core/config/configschema.h"
#include "core/config/configtree.h"

namespace accel::config::detail {

namespace {

class FieldWriter {
public:
    explicit FieldWriter(ConfigValue &map) : m_map(map) {}

    void flag(const char *key, std::optional<bool> &value)
    {
        if (value)
            m_map.members[key] = ConfigValue::fromBool(*value);
    }
    void integer(const char *key, std::optional<std::int64_t> &value, schema::Range)
    {
        if (value)
            m_map.members[key] = ConfigValue::fromInt(*value);
    }
    void number(const char *key, std::optional<double> &value)
    {
        if (value)
            m_map.members[key] = ConfigValue::fromFloat(*value);
    }
    void text(const char *key, std::optional<std::string> &value, const schema::Choices &)
    {
        if (value)
            m_map.members[key] = ConfigValue::fromString(*value);
    }
    void boolOrText(const char *key, std::optional<BoolOrString> &value, const schema::Choices &)
    {
        if (!value)
            return;
        if (auto b = std::get_if<bool>(&*value))
            m_map.members[key] = ConfigValue::fromBool(*b);
        else
            m_map.members[key] = ConfigValue::fromString(std::get<std::string>(*value));
    }
    void textList(const char *key, std::optional<std::vector<std::string>> &value)
    {
        if (!value)
            return;
        ConfigValue list = ConfigValue::list();
        for (const std::string &item : *value)
            list.items.push_back(ConfigValue::fromString(item));
        m_map.members[key] = std::move(list);
    }
    void flagList(const char *key, std::optional<std::vector<bool>> &value, size_t,
                  std::optional<BoolOrString> &written)
    {
        if (!value)
            return;
        if (written) { // the file's own form, while it still means these values
            const bool *b = std::get_if<bool>(&*written);
            if (b ? *value == std::vector<bool>(value->size(), *b)
                  : parsePrecisionOverride(std::get<std::string>(*written)) == *value) {
                boolOrText(key, written, schema::anyText());
                return;
            }
        }
        ConfigValue list = ConfigValue::list();
        for (bool item : *value)
            list.items.push_back(ConfigValue::fromBool(item));
        m_map.members[key] = std::move(list);
    }

private:
    ConfigValue &m_map;
};

} // namespace

ConfigValue writeConfigTree(const ClusterConfig &input)
{
    ClusterConfig config = input; // the visitors take non-const references
    ConfigValue root = ConfigValue::map();
    root.members["compute_environment"] = ConfigValue::fromString(toString(config.computeEnvironment));
    root.members["distributed_type"] = ConfigValue::fromString(toString(config.distributedType));
    if (config.mixedPrecision)
        root.members["mixed_precision"] = ConfigValue::fromString(toString(*config.mixedPrecision));
    FieldWriter writer(root);
    if (config.isSageMaker())
        schema::visitSageMakerScalars(config, writer);
    else
        schema::visitClusterScalars(config, writer);
    schema::forEachBlock(config, [&](const char *key, auto &&visit) {
        ConfigValue block = ConfigValue::map();
        FieldWriter blockWriter(block);
        visit(blockWriter);
        if (std::string(key) == "megatron_lm_config")
            for (const auto &[name, value] : config.megatronLm.extras)
                block.members[name] = scalarToValue(value);
        if (auto nulls = config.nullKeys.find(key); nulls != config.nullKeys.end())
            for (const std::string &name : nulls->second)
                block.members.emplace(name, ConfigValue::null()); // a value set since wins
        if (!block.members.empty())
            root.members[key] = std::move(block);
    });
    if (config.isSageMaker() && !config.sagemaker.additionalArgs.empty()) {
        ConfigValue args = ConfigValue::map();
        for (const auto &[name, value] : config.sagemaker.additionalArgs)
            args.members[name] = scalarToValue(value);
        root.members["additional_args"] = std::move(args);
    }
    return root;
}

} // namespace accel::config::detail
