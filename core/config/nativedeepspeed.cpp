#include "core/config/nativedeepspeed.h"

#include "core/common/jsondocument.h"
#include "core/config/nativekeys.h"

#include <map>

namespace accel::config::native {

namespace {

using json = nlohmann::json;

enum class Switch { Unset, On, Off }; // Unset: absent or "auto"

// A value as the table's inert lists spell it: strings without quotes, everything else as JSON.
std::string valueText(const json &value)
{
    return value.is_string() ? value.get<std::string>() : jsonutil::jsonExcerpt(value);
}

Error refusal(const std::string &key, const json &value, const std::string &why, const std::string &source)
{
    return Error{ErrorCode::Unsupported, key + "=" + jsonutil::jsonExcerpt(value) + ": " + why, source};
}

Result<Switch> enabled(const json &root, const char *block, const std::string &source)
{
    const auto it = root.find(block);
    if (it == root.end() || !it->is_object())
        return Switch::Unset; // a block that is not an object is refused by the walk
    const auto flag = it->find("enabled");
    if (flag == it->end() || flag->is_null() || (flag->is_string() && flag->get<std::string>() == "auto"))
        return Switch::Unset;
    if (!flag->is_boolean())
        return makeError(ErrorCode::InvalidInput,
                         std::string(block) + ".enabled=" + jsonutil::jsonExcerpt(*flag) +
                             ": expected true, false or \"auto\"",
                         source);
    return flag->get<bool>() ? Switch::On : Switch::Off;
}

// Accelerate's DeepSpeedPlugin.set_mixed_precision and AcceleratorState.mixed_precision: the
// file's explicit switch wins, "auto" takes the requested precision, and contradictions are errors.
Result<std::string> resolvePrecision(Switch fp16, Switch bf16, const std::string &requested, const std::string &source)
{
    auto conflict = [&](const std::string &what) {
        return makeError(ErrorCode::InvalidInput,
                         "mixed precision " + requested + " against " + what +
                             " in the DeepSpeed file: make them agree (or write \"auto\")",
                         source);
    };
    if (fp16 == Switch::On && bf16 == Switch::On)
        return makeError(ErrorCode::InvalidInput,
                         "fp16.enabled and bf16.enabled are both true: DeepSpeed trains in one of them", source);
    if ((requested == "bf16" || requested == "fp8") && fp16 == Switch::On)
        return conflict("fp16.enabled: true");
    if (requested == "fp16" && bf16 == Switch::On)
        return conflict("bf16.enabled: true");
    if (requested == "fp16" && fp16 == Switch::Off)
        return conflict("fp16.enabled: false");
    if (requested == "bf16" && bf16 == Switch::Off)
        return conflict("bf16.enabled: false");
    if (requested == "fp8")
        return requested;
    if (fp16 == Switch::On)
        return std::string("fp16");
    if (bf16 == Switch::On)
        return std::string("bf16");
    return requested.empty() ? std::string("no") : requested;
}

struct Walk {
    bool fp16On = false;
    std::vector<std::string> refusals;
    std::map<std::string, std::vector<std::string>> noted; // meaning -> keys

    void visit(const json &object, const std::string &prefix)
    {
        for (const auto &[name, value] : object.items()) {
            const std::string path = prefix + name;
            const Key *key = findDeepSpeedKey(path);
            if (!key) {
                refusals.push_back(path + "=" + jsonutil::jsonExcerpt(value, 60) +
                                   ": not a DeepSpeed setting the native runtime knows; remove it (docs/native-keys.md "
                                   "lists the ones it acts on, refuses or notes)");
                continue;
            }
            const bool scaler = path.rfind("fp16.", 0) == 0 && path != "fp16.enabled";
            if (key->verdict == Verdict::Acted) {
                if (value.is_object())
                    visit(value, path + ".");
                continue;
            }
            if (key->by == Actor::Plan || isInert(*key, valueText(value)))
                continue; // the sharding plan refuses its own keys; inert values ask for nothing
            if (key->verdict == Verdict::Refused && (!scaler || fp16On))
                refusals.push_back(path + "=" + jsonutil::jsonExcerpt(value, 60) + ": " + key->meaning);
            else
                noted[key->meaning].push_back(path + "=" + jsonutil::jsonExcerpt(value, 60));
        }
    }
};

} // namespace

InputLimits deepSpeedFileLimits()
{
    InputLimits limits;
    limits.maxBytes = uint64_t(1) << 20;
    limits.subject = "the DeepSpeed config";
    return limits;
}

Result<DeepSpeedFileCheck> checkDeepSpeedFile(const json &root, const std::string &source, const std::string &requested)
{
    if (!root.is_object())
        return makeError(ErrorCode::InvalidInput,
                         "expected a JSON object at the top; got " + jsonutil::jsonExcerpt(root), source);
    for (const char *block : {"fp16", "bf16"}) {
        if (const auto it = root.find(block); it != root.end() && !it->is_object() && !it->is_null())
            return tl::unexpected(refusal(block, *it, "expected an object of settings", source));
    }
    auto fp16 = enabled(root, "fp16", source);
    if (!fp16)
        return tl::unexpected(fp16.error());
    auto bf16 = enabled(root, "bf16", source);
    if (!bf16)
        return tl::unexpected(bf16.error());
    auto precision = resolvePrecision(*fp16, *bf16, requested, source);
    if (!precision)
        return tl::unexpected(precision.error());

    Walk walk;
    walk.fp16On = *precision == "fp16";
    walk.visit(root, "");
    if (!walk.refusals.empty()) {
        std::string message = walk.refusals.front();
        for (size_t i = 1; i < walk.refusals.size(); ++i)
            message += "; " + walk.refusals[i];
        return makeError(ErrorCode::Unsupported, message, source);
    }
    DeepSpeedFileCheck check;
    check.mixedPrecision = *precision;
    const std::string asked = requested.empty() ? "no" : requested;
    if (check.mixedPrecision != asked)
        check.notes.push_back(source + ": " + (check.mixedPrecision == "fp16" ? "fp16" : "bf16") +
                              ".enabled is true: the job trains in " + check.mixedPrecision + " (mixed precision " +
                              asked + " otherwise), as Accelerate's DeepSpeed integration does");
    for (const auto &[meaning, keys] : walk.noted) {
        std::string text = source + ": ";
        for (size_t i = 0; i < keys.size(); ++i)
            text += (i ? ", " : "") + keys[i];
        check.notes.push_back(text + ": " + meaning);
    }
    return check;
}

Result<DeepSpeedFileCheck> checkDeepSpeedFile(const std::string &path, const std::string &requested)
{
    auto root = jsonutil::readJsonFile(path, deepSpeedFileLimits());
    if (!root)
        return tl::unexpected(root.error());
    return checkDeepSpeedFile(*root, path, requested);
}

} // namespace accel::config::native
