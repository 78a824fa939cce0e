#include "launcher/export/configflags.h"

#include "core/config/configschema.h"
#include "launcher/launchflags.h"

#include <cstdio>
#include <sstream>

namespace accel::launcher::exporting {

namespace {

using config::ClusterConfig;
using config::DistributedType;
namespace schema = config::schema;

// Config key (block-qualified for fp8_config) -> flag name, where they differ. The questionnaire's
// amax_history_length, amax_compute_algorithm and optimization_level have no flag (accelerate launch
// exports them under names no recipe reads), so they are reported as dropped.
std::string flagNameFor(const std::string &block, const std::string &key)
{
    if (block == "fp8_config")
        return key.rfind("fp8_", 0) == 0 ? key : "fp8_" + key;
    if (block.empty() && key == "use_cpu")
        return "cpu";
    return key;
}

std::string numberText(double value)
{
    std::ostringstream out;
    out.precision(17);
    out << value;
    return out.str();
}

std::string boolText(bool value)
{
    return value ? "true" : "false";
}

struct ExportVisitor {
    std::string block;
    std::vector<FlagWord> *flags;
    std::vector<std::string> *dropped;

    void emit(const std::string &key, const std::string &value, bool isBool)
    {
        const std::string name = flagNameFor(block, key);
        const LaunchFlag *flag = findLaunchFlag(name);
        if (!flag) {
            if (dropped)
                dropped->push_back((block.empty() ? "" : block + ".") + key);
            return;
        }
        if (flag->kind == LaunchFlag::Kind::Switch) {
            if (isBool && value == "true")
                flags->push_back({name, "", true});
            return;
        }
        flags->push_back({name, value, false});
    }
    void flag(const std::string &key, std::optional<bool> &v)
    {
        if (v)
            emit(key, boolText(*v), true);
    }
    void integer(const std::string &key, std::optional<std::int64_t> &v, schema::Range)
    {
        if (v)
            emit(key, std::to_string(*v), false);
    }
    void number(const std::string &key, std::optional<double> &v)
    {
        if (v)
            emit(key, numberText(*v), false);
    }
    void text(const std::string &key, std::optional<std::string> &v, const schema::Choices &)
    {
        if (v)
            emit(key, *v, false);
    }
    void boolOrText(const std::string &key, std::optional<config::BoolOrString> &v, const schema::Choices &)
    {
        if (!v)
            return;
        if (const bool *b = std::get_if<bool>(&*v))
            emit(key, boolText(*b), true);
        else
            emit(key, std::get<std::string>(*v), false);
    }
    void textList(const std::string &key, std::optional<std::vector<std::string>> &v)
    {
        if (v && dropped)
            dropped->push_back(key);
    }
    void flagList(const std::string &key, std::optional<std::vector<bool>> &v, size_t,
                  std::optional<config::BoolOrString> &)
    {
        if (!v)
            return;
        std::string text;
        for (bool b : *v)
            text += (text.empty() ? "" : ",") + boolText(b);
        emit(key, text, false);
    }
};

struct ImportVisitor {
    std::string block;
    const std::map<std::string, std::string> *flags;
    std::vector<std::string> errors;

    const std::string *find(const std::string &key) const
    {
        auto it = flags->find(flagNameFor(block, key));
        return it == flags->end() ? nullptr : &it->second;
    }
    void bad(const std::string &key, const std::string &value, const std::string &want)
    {
        errors.push_back("--" + flagNameFor(block, key) + " " + value + ": expected " + want);
    }
    static std::optional<bool> toBool(const std::string &text)
    {
        if (text == "true" || text == "True" || text == "1" || text == "yes")
            return true;
        if (text == "false" || text == "False" || text == "0" || text == "no")
            return false;
        return std::nullopt;
    }
    void flag(const std::string &key, std::optional<bool> &v)
    {
        if (const std::string *text = find(key)) {
            if (auto b = toBool(*text))
                v = *b;
            else
                bad(key, *text, "true or false");
        }
    }
    void integer(const std::string &key, std::optional<std::int64_t> &v, schema::Range range)
    {
        const std::string *text = find(key);
        if (!text)
            return;
        try {
            size_t used = 0;
            const long long value = std::stoll(*text, &used);
            if (used != text->size() || (range.minimum && value < *range.minimum) ||
                (range.maximum && value > *range.maximum))
                throw std::invalid_argument("range");
            v = value;
        } catch (const std::exception &) {
            bad(key, *text, "an integer" + (range.minimum ? " >= " + std::to_string(*range.minimum) : std::string()));
        }
    }
    void number(const std::string &key, std::optional<double> &v)
    {
        const std::string *text = find(key);
        if (!text)
            return;
        try {
            size_t used = 0;
            const double value = std::stod(*text, &used);
            if (used != text->size())
                throw std::invalid_argument("trailing");
            v = value;
        } catch (const std::exception &) {
            bad(key, *text, "a number");
        }
    }
    void text(const std::string &key, std::optional<std::string> &v, const schema::Choices &choices)
    {
        const std::string *text = find(key);
        if (!text)
            return;
        if (!choices.values.empty() && !choices.caseInsensitive) {
            bool known = false;
            for (const std::string &choice : choices.values)
                known = known || choice == *text;
            if (!known) {
                std::string list;
                for (const std::string &choice : choices.values)
                    list += (list.empty() ? "" : ", ") + choice;
                bad(key, *text, "one of " + list);
                return;
            }
        }
        v = *text;
    }
    void boolOrText(const std::string &key, std::optional<config::BoolOrString> &v, const schema::Choices &)
    {
        if (const std::string *text = find(key)) {
            if (auto b = toBool(*text))
                v = *b;
            else
                v = *text;
        }
    }
    void textList(const std::string &, std::optional<std::vector<std::string>> &) {}
    void flagList(const std::string &key, std::optional<std::vector<bool>> &v, size_t expected,
                  std::optional<config::BoolOrString> &)
    {
        const std::string *text = find(key);
        if (!text)
            return;
        std::vector<bool> values;
        std::stringstream in(*text);
        std::string item;
        while (std::getline(in, item, ',')) {
            auto b = toBool(item);
            if (!b) {
                bad(key, *text, std::to_string(expected) + " comma-separated booleans");
                return;
            }
            values.push_back(*b);
        }
        if (values.size() != expected) {
            bad(key, *text, std::to_string(expected) + " comma-separated booleans");
            return;
        }
        v = values;
    }
};

const char *modeFlagFor(DistributedType type)
{
    if (config::isMultiAcceleratorType(type))
        return "multi_gpu";
    switch (type) {
    case DistributedType::Fsdp:
        return "use_fsdp";
    case DistributedType::DeepSpeed:
        return "use_deepspeed";
    case DistributedType::MegatronLm:
        return "use_megatron_lm";
    case DistributedType::Xla:
        return "tpu";
    default:
        return nullptr;
    }
}

} // namespace

Result<std::vector<FlagWord>> configToFlags(const ClusterConfig &input, std::vector<std::string> *dropped)
{
    if (input.isSageMaker())
        return makeError(ErrorCode::Unsupported, "compute_environment AMAZON_SAGEMAKER has no launch command form",
                         input.source.file);
    ClusterConfig config = input;
    std::vector<FlagWord> flags;
    if (const char *mode = modeFlagFor(config.distributedType))
        flags.push_back({mode, "", true});
    if (!config.parallelism.isEmpty())
        flags.push_back({"use_parallelism_config", "", true});
    if (config.mixedPrecision)
        flags.push_back({"mixed_precision", config::toString(*config.mixedPrecision), false});

    // Top-level scalars: TPU-only and defaulted keys that no flag can change are left out.
    ExportVisitor top{"", &flags, dropped};
    if (config.mainTrainingFunction && *config.mainTrainingFunction == "main")
        config.mainTrainingFunction.reset();
    if (config.rdzvBackend && *config.rdzvBackend == "static")
        config.rdzvBackend.reset();
    schema::visitClusterScalars(config, top);
    if (!config.megatronLm.extras.empty() && dropped) {
        for (const auto &[key, value] : config.megatronLm.extras)
            dropped->push_back("megatron_lm_config." + key);
    }
    schema::forEachBlock(config, [&](const std::string &block, auto visit) {
        if (block == "ipex_config")
            return;
        ExportVisitor visitor{block, &flags, dropped};
        visit(visitor);
    });
    return flags;
}

std::vector<std::string> flagArguments(const std::vector<FlagWord> &flags)
{
    std::vector<std::string> words;
    for (const FlagWord &flag : flags) {
        words.push_back("--" + flag.name);
        if (!flag.isSwitch)
            words.push_back(flag.value);
    }
    return words;
}

Result<ClusterConfig> flagsToConfig(const std::map<std::string, std::string> &flags, ClusterConfig config,
                                    bool inferType)
{
    auto has = [&](const char *name) { return flags.count(name) > 0; };
    bool modeSet = true;
    if (has("use_fsdp"))
        config.distributedType = DistributedType::Fsdp;
    else if (has("use_deepspeed"))
        config.distributedType = DistributedType::DeepSpeed;
    else if (has("use_megatron_lm"))
        config.distributedType = DistributedType::MegatronLm;
    else if (has("multi_gpu"))
        config.distributedType = DistributedType::MultiGpu;
    else if (has("tpu"))
        config.distributedType = DistributedType::Xla;
    else
        modeSet = false;
    if (auto it = flags.find("mixed_precision"); it != flags.end()) {
        auto precision = config::mixedPrecisionFromString(it->second);
        if (!precision)
            return makeError(ErrorCode::InvalidInput, "--mixed_precision " + it->second + ": expected one of " +
                                                          schema::joined(schema::mixedPrecisionNames()));
        config.mixedPrecision = *precision;
    }
    std::vector<std::string> errors;
    ImportVisitor top{"", &flags, {}};
    schema::visitClusterScalars(config, top);
    errors.insert(errors.end(), top.errors.begin(), top.errors.end());
    schema::forEachBlock(config, [&](const std::string &block, auto visit) {
        if (block == "ipex_config")
            return;
        ImportVisitor visitor{block, &flags, {}};
        visit(visitor);
        errors.insert(errors.end(), visitor.errors.begin(), visitor.errors.end());
    });
    if (!errors.empty()) {
        std::string more = errors.size() > 1 ? " (and " + std::to_string(errors.size() - 1) + " more)" : "";
        return makeError(ErrorCode::InvalidInput, errors.front() + more);
    }
    if (!modeSet && inferType) {
        const bool several = config.numProcesses.value_or(1) > 1 || config.numMachines.value_or(1) > 1;
        config.distributedType = several ? DistributedType::MultiCpu : DistributedType::No;
    }
    config::applyDefaults(config);
    return config;
}

} // namespace accel::launcher::exporting
