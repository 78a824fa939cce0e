#include "core/config/configschemadoc.h"

#include "core/config/clusterconfig.h"
#include "core/config/configschema.h"

#include <functional>
#include <map>
#include <sstream>
#include <vector>

namespace accel::config::schema {

namespace {

struct Row {
    std::string kind;
    std::string values;
    std::string defaultValue; // empty: none (the key is not written unless set)
};

std::string code(const std::string &text)
{
    return "`" + text + "`";
}

std::string codeList(const std::vector<std::string> &values)
{
    std::vector<std::string> quoted;
    for (const std::string &value : values)
        quoted.push_back(code(value));
    return joined(quoted);
}

std::string flagText(bool value)
{
    return value ? "true" : "false";
}

std::string rangeText(const Range &range)
{
    if (range.minimum && range.maximum)
        return std::to_string(*range.minimum) + " to " + std::to_string(*range.maximum);
    if (range.minimum)
        return std::to_string(*range.minimum) + " or more";
    if (range.maximum)
        return std::to_string(*range.maximum) + " or less";
    return "";
}

std::string choicesText(const Choices &choices)
{
    if (choices.values.empty())
        return "";
    return codeList(choices.values) + (choices.caseInsensitive ? " (any case)" : "");
}

// Collects each key's row, its default read from the visited config.
struct RowCollector {
    std::map<std::string, Row> &rows;

    void flag(const char *key, std::optional<bool> &value)
    {
        rows[key] = {"bool", codeList({"true", "false"}), value ? code(flagText(*value)) : ""};
    }
    void integer(const char *key, std::optional<std::int64_t> &value, Range range)
    {
        rows[key] = {"integer", rangeText(range), value ? code(std::to_string(*value)) : ""};
    }
    void number(const char *key, std::optional<double> &value)
    {
        std::ostringstream text;
        if (value)
            text << *value;
        rows[key] = {"number", "", value ? code(text.str()) : ""};
    }
    void text(const char *key, std::optional<std::string> &value, const Choices &choices)
    {
        rows[key] = {"text", choicesText(choices), value ? code(*value) : ""};
    }
    void boolOrText(const char *key, std::optional<BoolOrString> &value, const Choices &choices)
    {
        std::string shown;
        if (value)
            shown = code(std::holds_alternative<bool>(*value) ? flagText(std::get<bool>(*value))
                                                              : std::get<std::string>(*value));
        const std::string values = choicesText(choices);
        rows[key] = {"bool or text", values.empty() ? "" : codeList({"true", "false"}) + " or " + values, shown};
    }
    void textList(const char *key, std::optional<std::vector<std::string>> &value)
    {
        rows[key] = {"list of text", "", value ? codeList(*value) : ""};
    }
    void flagList(const char *key, std::optional<std::vector<bool>> &, size_t expectedSize,
                  std::optional<BoolOrString> &)
    {
        rows[key] = {"list of " + std::to_string(expectedSize) + " bools", "", ""};
    }
};

using Rows = std::map<std::string, Row>;

// The rows `visit` gives for a config of `type` after Accelerate's defaults.
Rows rowsOf(ComputeEnvironment environment, DistributedType type,
            const std::function<void(ClusterConfig &, RowCollector &)> &visit)
{
    ClusterConfig config;
    config.computeEnvironment = environment;
    config.distributedType = type;
    applyDefaults(config);
    Rows rows;
    RowCollector collector{rows};
    visit(config, collector);
    return rows;
}

// A default that depends on distributed_type (num_processes: -1, or 1 for NO) is shown with both.
Rows withTypeDependentDefaults(ComputeEnvironment environment,
                               const std::function<void(ClusterConfig &, RowCollector &)> &visit)
{
    Rows rows = rowsOf(environment, DistributedType::MultiCpu, visit);
    const Rows single = rowsOf(environment, DistributedType::No, visit);
    for (auto &[key, row] : rows) {
        const std::string &other = single.at(key).defaultValue;
        if (other != row.defaultValue)
            row.defaultValue += " (" + (other.empty() ? std::string("none") : other) + " with " +
                                code(std::string("distributed_type: ") + toString(DistributedType::No)) + ")";
    }
    return rows;
}

// One table; a blank line before every one but the first.
void table(std::ostringstream &out, const std::string &title, const Rows &rows)
{
    if (out.tellp() > 0)
        out << "\n";
    out << "### " << title << "\n\n";
    out << "| Key | Kind | Values | Default |\n";
    out << "| --- | --- | --- | --- |\n";
    for (const auto &[key, row] : rows)
        out << "| " << code(key) << " | " << row.kind << " | " << (row.values.empty() ? "any" : row.values) << " | "
            << (row.defaultValue.empty() ? "none" : row.defaultValue) << " |\n";
}

// The keys the reader and writer handle themselves.
void addOwnKeys(Rows &rows, bool sageMaker)
{
    if (sageMaker) {
        rows["compute_environment"] = {"text", code(toString(ComputeEnvironment::AmazonSageMaker)), "none (required)"};
        rows["additional_args"] = {"map of scalars", "any", "none"};
    } else {
        rows["compute_environment"] = {"text", codeList(computeEnvironmentNames()),
                                       code(toString(ClusterConfig().computeEnvironment))};
    }
    rows["distributed_type"] = {"text", codeList(distributedTypeNames(sageMaker)), "none (required)"};
    rows["mixed_precision"] = {"text", codeList(mixedPrecisionNames()), "none"};
}

} // namespace

std::string markdownReference()
{
    std::ostringstream out;
    Rows local = withTypeDependentDefaults(ComputeEnvironment::LocalMachine,
                                           [](ClusterConfig &c, RowCollector &v) { visitClusterScalars(c, v); });
    addOwnKeys(local, false);
    table(out, "Top-level keys (`compute_environment: LOCAL_MACHINE`)", local);

    ClusterConfig config;
    forEachLocalBlock(config, [&out](const char *block, auto &&visit) {
        Rows rows;
        RowCollector collector{rows};
        visit(collector);
        if (std::string(block) == "megatron_lm_config")
            for (const std::string &key : megatronLmExtraKeys())
                rows[key] = {"scalar", "any", "none"};
        table(out, code(block), rows);
    });

    Rows sageMaker = rowsOf(ComputeEnvironment::AmazonSageMaker, DistributedType::DataParallel,
                            [](ClusterConfig &c, RowCollector &v) { visitSageMakerScalars(c, v); });
    addOwnKeys(sageMaker, true);
    table(out, "Top-level keys (`compute_environment: AMAZON_SAGEMAKER`)", sageMaker);
    return out.str();
}

} // namespace accel::config::schema
