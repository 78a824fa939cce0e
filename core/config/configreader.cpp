// ConfigValue -> ClusterConfig, with Accelerate's load fix-ups and strict key checking. Every
// problem is reported with file, line and key; reading goes on after an error so one run lists
// them all.
#include "core/common/fileutil.h"
#include "core/common/text.h"
#include "core/config/configschema.h"
#include "core/config/configtree.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace accel::config::detail {

namespace {

using schema::Choices;
using schema::Range;

using schema::joined;

bool inChoices(const std::string &text, const Choices &choices)
{
    if (choices.values.empty())
        return true;
    for (const std::string &value : choices.values)
        if (choices.caseInsensitive ? accel::text::equalsIgnoringCase(value, text) : value == text)
            return true;
    return false;
}

// The text of a scalar as a string field sees it (plain `NO` -> "NO", JSON 2 -> "2").
std::string scalarText(const ConfigValue &value)
{
    if (value.plain || value.type == ConfigValue::Type::String)
        return value.text;
    switch (value.type) {
    case ConfigValue::Type::Bool:
        return value.boolean ? "true" : "false";
    case ConfigValue::Type::Int:
        return std::to_string(value.integer);
    case ConfigValue::Type::Float:
        return pythonFloatRepr(value.real);
    default:
        return value.text;
    }
}

struct Context {
    std::string file;
    Diagnostics &diagnostics;
    SourceInfo &source;

    void report(Severity severity, const std::string &path, int line, std::string message)
    {
        diagnostics.push_back(Diagnostic{severity, file, line, path, std::move(message)});
    }
};

// Reads the fields of one mapping (the top level or a nested block) through the schema visitors.
class FieldReader {
public:
    FieldReader(Context &context, const ConfigValue &map, std::string pathPrefix)
        : m_context(context), m_map(map), m_prefix(std::move(pathPrefix))
    {}

    const std::set<std::string> &consumed() const { return m_consumed; }

    void flag(const char *key, std::optional<bool> &out)
    {
        const ConfigValue *v = find(key);
        if (!v)
            return;
        if (v->type == ConfigValue::Type::Bool)
            out = v->boolean;
        else
            error(key, *v, "expected true or false; got " + v->describe());
    }

    void integer(const char *key, std::optional<std::int64_t> &out, Range range)
    {
        const ConfigValue *v = find(key);
        if (!v)
            return;
        if (v->type != ConfigValue::Type::Int) {
            error(key, *v, "expected " + rangeText(range) + "; got " + v->describe());
            return;
        }
        if ((range.minimum && v->integer < *range.minimum) || (range.maximum && v->integer > *range.maximum)) {
            error(key, *v, "expected " + rangeText(range) + "; got " + v->describe());
            return;
        }
        out = v->integer;
    }

    void number(const char *key, std::optional<double> &out)
    {
        const ConfigValue *v = find(key);
        if (!v)
            return;
        if (v->type == ConfigValue::Type::Float && !std::isfinite(v->real))
            error(key, *v, "expected a finite number; got " + v->describe());
        else if (v->type == ConfigValue::Type::Float)
            out = v->real;
        else if (v->type == ConfigValue::Type::Int)
            out = static_cast<double>(v->integer);
        else
            error(key, *v, "expected a number; got " + v->describe());
    }

    void text(const char *key, std::optional<std::string> &out, const Choices &choices)
    {
        const ConfigValue *v = find(key);
        if (!v)
            return;
        if (!v->isScalar()) {
            error(key, *v,
                  "expected " + std::string(choices.values.empty() ? "a string" : "one of " + joined(choices.values)) +
                      "; got " + v->typeName());
            return;
        }
        const std::string value = scalarText(*v);
        if (!inChoices(value, choices)) {
            error(key, *v, "expected one of " + joined(choices.values) + "; got " + value);
            return;
        }
        out = value;
    }

    void boolOrText(const char *key, std::optional<BoolOrString> &out, const Choices &choices)
    {
        const ConfigValue *v = find(key);
        if (!v)
            return;
        if (v->type == ConfigValue::Type::Bool) {
            out = BoolOrString(v->boolean);
            return;
        }
        const std::string expected =
            choices.values.empty() ? "true, false or a string" : "true, false or one of " + joined(choices.values);
        if (!v->isScalar()) {
            error(key, *v, "expected " + expected + "; got " + v->typeName());
            return;
        }
        const std::string value = scalarText(*v);
        if (!inChoices(value, choices)) {
            error(key, *v, "expected " + expected + "; got " + value);
            return;
        }
        out = BoolOrString(value);
    }

    void textList(const char *key, std::optional<std::vector<std::string>> &out)
    {
        const ConfigValue *v = find(key);
        if (!v)
            return;
        if (v->type != ConfigValue::Type::List) {
            error(key, *v, "expected a list of strings; got " + v->describe());
            return;
        }
        std::vector<std::string> list;
        for (const ConfigValue &item : v->items) {
            if (!item.isScalar() || item.type == ConfigValue::Type::Null) {
                error(key, item.line ? item : *v,
                      std::string("expected a list of strings; an item is ") + item.typeName());
                return;
            }
            list.push_back(scalarText(item));
        }
        out = std::move(list);
    }

    void flagList(const char *key, std::optional<std::vector<bool>> &out, size_t expectedSize,
                  std::optional<BoolOrString> &written)
    {
        const ConfigValue *v = find(key);
        if (!v)
            return;
        const std::string expected = "expected a list of " + std::to_string(expectedSize) + " booleans";
        // Accelerate's own FP8 template writes a bool or the text "(false, false, false)".
        if (v->type == ConfigValue::Type::Bool) {
            out = std::vector<bool>(expectedSize, v->boolean);
            written = BoolOrString(v->boolean);
            return;
        }
        if (v->type == ConfigValue::Type::String) {
            std::vector<bool> parsed = parsePrecisionOverride(v->text);
            if (parsed.size() != expectedSize) {
                error(key, *v, expected + ", true/false or text like '(false, false, true)'; got " + v->describe());
                return;
            }
            out = std::move(parsed);
            written = BoolOrString(v->text);
            return;
        }
        if (v->type != ConfigValue::Type::List) {
            error(key, *v, expected + ", true/false or text like '(false, false, true)'; got " + v->describe());
            return;
        }
        if (v->items.size() != expectedSize) {
            error(key, *v, expected + "; got " + std::to_string(v->items.size()) + " items");
            return;
        }
        std::vector<bool> list;
        for (const ConfigValue &item : v->items) {
            if (item.type != ConfigValue::Type::Bool) {
                error(key, item.line ? item : *v, expected + "; got " + item.describe());
                return;
            }
            list.push_back(item.boolean);
        }
        out = std::move(list);
    }

private:
    Context &m_context;
    const ConfigValue &m_map;
    std::string m_prefix;
    std::set<std::string> m_consumed;

    const ConfigValue *find(const char *key)
    {
        if (m_map.type != ConfigValue::Type::Map)
            return nullptr;
        auto it = m_map.members.find(key);
        if (it == m_map.members.end())
            return nullptr;
        m_consumed.insert(key);
        m_context.source.lines[m_prefix + key] = it->second.line;
        if (it->second.type == ConfigValue::Type::Null)
            return nullptr;
        return &it->second;
    }

    void error(const char *key, const ConfigValue &value, std::string message)
    {
        m_context.report(Severity::Error, m_prefix + key, value.line, std::move(message));
    }

    static std::string rangeText(Range range)
    {
        if (range.minimum && range.maximum)
            return "an integer from " + std::to_string(*range.minimum) + " to " + std::to_string(*range.maximum);
        if (range.minimum)
            return "an integer >= " + std::to_string(*range.minimum);
        return "an integer";
    }
};

std::optional<Scalar> toScalar(const ConfigValue &value)
{
    switch (value.type) {
    case ConfigValue::Type::Bool:
        return Scalar(value.boolean);
    case ConfigValue::Type::Int:
        return Scalar(value.integer);
    case ConfigValue::Type::Float:
        if (!std::isfinite(value.real))
            return std::nullopt; // JSON has no text for it
        return Scalar(value.real);
    case ConfigValue::Type::String:
        return Scalar(value.text);
    default:
        return std::nullopt;
    }
}

void unknownKey(Context &context, const std::string &path, const std::string &key, int line,
                const std::vector<std::string> &known, const std::string &where)
{
    std::string message = "unknown key" + where;
    const std::string suggestion = fileutil::closestMatchIn(key, known);
    if (!suggestion.empty())
        message += "; did you mean '" + suggestion + "'?";
    else
        message += "; known keys: " + joined(known);
    context.report(Severity::Error, path, line, message);
}

// A nested block: renames prefix-less keys (which Accelerate's launcher accepts), visits the
// known keys and reports the rest.
template <typename Visit>
void readBlock(Context &context, const std::string &blockKey, const ConfigValue &value, Visit &&visit,
               MegatronLmConfig *megatron, std::vector<std::string> &nullKeys)
{
    if (value.type == ConfigValue::Type::Null)
        return;
    if (value.type != ConfigValue::Type::Map) {
        context.report(Severity::Error, blockKey, value.line,
                       "expected a mapping of " + blockKey + " keys; got " + value.describe());
        return;
    }
    const std::vector<std::string> known = schema::blockKeys(blockKey);
    const std::string prefix = schema::blockPrefix(blockKey);
    ConfigValue block = value;
    if (!prefix.empty()) {
        for (const auto &[key, member] : value.members) {
            const std::string full = prefix + key;
            if (key.rfind(prefix, 0) != 0 && std::binary_search(known.begin(), known.end(), full) &&
                !value.members.count(full)) {
                context.report(Severity::Warning, blockKey + "." + key, member.line,
                               "written without the '" + prefix + "' prefix; read (and saved) as '" + full + "'");
                block.members.erase(key);
                block.members.emplace(full, member);
            }
        }
    }
    FieldReader reader(context, block, blockKey + ".");
    visit(reader);
    for (const auto &[key, member] : block.members)
        if (member.type == ConfigValue::Type::Null &&
            (reader.consumed().count(key) ||
             (megatron && std::find(megatronLmExtraKeys().begin(), megatronLmExtraKeys().end(), key) !=
                              megatronLmExtraKeys().end())))
            nullKeys.push_back(key);
    const std::vector<std::string> &extras = megatronLmExtraKeys();
    for (const auto &[key, member] : block.members) {
        if (reader.consumed().count(key))
            continue;
        const std::string path = blockKey + "." + key;
        if (megatron && std::find(extras.begin(), extras.end(), key) != extras.end()) {
            context.source.lines[path] = member.line;
            if (member.type == ConfigValue::Type::Null)
                continue;
            if (auto scalar = toScalar(member))
                megatron->extras[key] = *scalar;
            else
                context.report(Severity::Error, path, member.line,
                               "expected a single value (true/false, a finite number or text); got " +
                                   member.describe());
            continue;
        }
        unknownKey(context, path, key, member.line, known, " in " + blockKey);
    }
}

} // namespace

ConfigValue scalarToValue(const Scalar &scalar)
{
    if (auto b = std::get_if<bool>(&scalar))
        return ConfigValue::fromBool(*b);
    if (auto i = std::get_if<std::int64_t>(&scalar))
        return ConfigValue::fromInt(*i);
    if (auto d = std::get_if<double>(&scalar))
        return ConfigValue::fromFloat(*d);
    return ConfigValue::fromString(std::get<std::string>(scalar));
}

ClusterConfig readConfigTree(const ConfigValue &root, const std::string &fileName, Diagnostics &diagnostics)
{
    ClusterConfig config;
    config.source.file = fileName;
    Context context{fileName, diagnostics, config.source};
    if (root.type == ConfigValue::Type::Null) {
        context.report(Severity::Error, "", 0, "the file is empty; expected a mapping of config keys");
        return config;
    }
    if (root.type != ConfigValue::Type::Map) {
        context.report(Severity::Error, "", root.line,
                       std::string("expected a mapping of config keys at the top level; got ") + root.typeName());
        return config;
    }
    ConfigValue top = root;
    auto member = [&](const char *key) -> const ConfigValue * {
        auto it = top.members.find(key);
        return it == top.members.end() ? nullptr : &it->second;
    };

    // compute_environment decides which keys exist.
    if (const ConfigValue *env = member("compute_environment")) {
        config.source.lines["compute_environment"] = env->line;
        const std::string text = env->isScalar() ? scalarText(*env) : env->typeName();
        if (auto parsed = computeEnvironmentFromString(text))
            config.computeEnvironment = *parsed;
        else
            context.report(Severity::Error, "compute_environment", env->line,
                           "expected one of " + joined(schema::computeEnvironmentNames()) + "; got " + text);
    }
    const bool sageMaker = config.isSageMaker();

    // Legacy fix-ups, in Accelerate's order.
    if (!member("mixed_precision")) {
        const ConfigValue *fp16 = member("fp16");
        if (fp16 && fp16->type == ConfigValue::Type::Bool && fp16->boolean)
            config.mixedPrecision = MixedPrecision::Fp16;
    }
    if (const ConfigValue *fp16 = member("fp16")) {
        context.report(Severity::Warning, "fp16", fp16->line, "legacy key, replaced by mixed_precision");
        top.members.erase("fp16");
    }
    if (const ConfigValue *legacy = member("dynamo_backend")) {
        const int line = legacy->line;
        context.report(Severity::Warning, "dynamo_backend", line, "legacy top-level key, moved into dynamo_config");
        ConfigValue moved = *legacy;
        top.members.erase("dynamo_backend");
        ConfigValue block = ConfigValue::map();
        block.line = line;
        if (!(moved.isScalar() && scalarText(moved) == "NO"))
            block.members.emplace("dynamo_backend", moved);
        top.members["dynamo_config"] = block;
    }

    if (const ConfigValue *type = member("distributed_type")) {
        config.source.lines["distributed_type"] = type->line;
        const std::string text = type->isScalar() ? scalarText(*type) : type->typeName();
        const auto &names = schema::distributedTypeNames(sageMaker);
        auto parsed = distributedTypeFromString(text);
        if (parsed && std::find(names.begin(), names.end(), text) != names.end())
            config.distributedType = *parsed;
        else
            context.report(Severity::Error, "distributed_type", type->line,
                           "expected one of " + joined(names) + "; got " + text);
    } else {
        context.report(Severity::Error, "distributed_type", 0,
                       "missing (required): one of " + joined(schema::distributedTypeNames(sageMaker)));
    }

    if (const ConfigValue *precision = member("mixed_precision")) {
        config.source.lines["mixed_precision"] = precision->line;
        if (precision->type != ConfigValue::Type::Null) {
            const std::string text = precision->isScalar() ? scalarText(*precision) : precision->typeName();
            if (auto parsed = mixedPrecisionFromString(text))
                config.mixedPrecision = *parsed;
            else
                context.report(Severity::Error, "mixed_precision", precision->line,
                               "expected one of " + joined(schema::mixedPrecisionNames()) + "; got " + text);
        }
    }

    FieldReader reader(context, top, "");
    if (sageMaker)
        schema::visitSageMakerScalars(config, reader);
    else
        schema::visitClusterScalars(config, reader);
    std::set<std::string> handled = reader.consumed();
    for (const char *key : {"compute_environment", "distributed_type", "mixed_precision"})
        handled.insert(key);

    schema::forEachBlock(config, [&](const char *key, auto &&visit) {
        handled.insert(key);
        if (const ConfigValue *block = member(key)) {
            config.source.lines[key] = block->line;
            std::vector<std::string> nulls;
            readBlock(context, key, *block, visit,
                      std::string(key) == "megatron_lm_config" ? &config.megatronLm : nullptr, nulls);
            if (!nulls.empty())
                config.nullKeys[key] = nulls;
        }
    });

    if (sageMaker) {
        handled.insert("additional_args");
        if (const ConfigValue *args = member("additional_args")) {
            config.source.lines["additional_args"] = args->line;
            if (args->type == ConfigValue::Type::Map) {
                for (const auto &[key, value] : args->members) {
                    if (value.type == ConfigValue::Type::Null)
                        continue;
                    if (auto scalar = toScalar(value))
                        config.sagemaker.additionalArgs[key] = *scalar;
                    else
                        context.report(Severity::Error, "additional_args." + key, value.line,
                                       "expected a single value (true/false, a finite number or text); got " +
                                           value.describe());
                }
            } else if (args->type != ConfigValue::Type::Null) {
                context.report(Severity::Error, "additional_args", args->line,
                               "expected a mapping; got " + args->describe());
            }
        }
        for (const char *required : {"ec2_instance_type", "iam_role_name"}) {
            const ConfigValue *value = member(required);
            if (!value || value->type == ConfigValue::Type::Null)
                context.report(Severity::Error, required, 0, "missing (required in a SageMaker config)");
        }
    }

    const std::vector<std::string> known = schema::topLevelKeys(sageMaker);
    const std::vector<std::string> other = schema::topLevelKeys(!sageMaker);
    for (const auto &[key, value] : top.members) {
        if (handled.count(key))
            continue;
        if (std::binary_search(other.begin(), other.end(), key)) {
            context.report(Severity::Error, key, value.line,
                           sageMaker ? "not valid in a SageMaker config (compute_environment: AMAZON_SAGEMAKER)"
                                     : "only valid in a SageMaker config (compute_environment: AMAZON_SAGEMAKER)");
            continue;
        }
        unknownKey(context, key, key, value.line, known, "");
    }

    applyDefaults(config);
    return config;
}

} // namespace accel::config::detail
