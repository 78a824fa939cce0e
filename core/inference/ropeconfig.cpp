#include "core/inference/ropeconfig.h"

#include "core/common/jsondocument.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>

namespace accel::inference {

namespace {

using nlohmann::json;

// The keys transformers' rope functions read for each type, besides rope_type/type, rope_theta and
// partial_rotary_factor.
const std::set<std::string> &keysOf(const std::string &type)
{
    static const std::set<std::string> none;
    static const std::set<std::string> factor = {"factor"};
    static const std::set<std::string> yarn = {"factor",           "original_max_position_embeddings",
                                               "attention_factor", "beta_fast",
                                               "beta_slow",        "mscale",
                                               "mscale_all_dim",   "truncate"};
    static const std::set<std::string> longrope = {"short_factor", "long_factor", "original_max_position_embeddings",
                                                   "attention_factor", "factor"};
    static const std::set<std::string> llama3 = {"factor", "original_max_position_embeddings", "low_freq_factor",
                                                 "high_freq_factor"};
    if (type == "linear" || type == "dynamic")
        return factor;
    if (type == "yarn")
        return yarn;
    if (type == "longrope")
        return longrope;
    if (type == "llama3")
        return llama3;
    return none;
}

std::string joined(const std::vector<std::string> &items)
{
    std::string s;
    for (const auto &item : items)
        s += (s.empty() ? "" : ", ") + item;
    return s;
}

} // namespace

const std::vector<std::string> &ropeTypes()
{
    static const std::vector<std::string> types = {"default", "linear", "dynamic", "yarn", "longrope", "llama3"};
    return types;
}

Result<RopeConfig> parseRopeConfig(const json &j, const RopeInput &input, const std::string &path,
                                   std::vector<std::pair<std::string, std::string>> &notes)
{
    // rope_scaling (transformers 4) takes precedence over rope_parameters, as transformers reads them.
    std::string key = "rope_parameters";
    json rope = json::object();
    if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) {
        key = "rope_scaling";
        rope = *it;
    } else if (auto p = j.find("rope_parameters"); p != j.end() && !p->is_null()) {
        rope = *p;
    }
    if (!rope.is_object())
        return makeError(ErrorCode::InvalidInput, key + ": expected an object; got " + jsonutil::jsonExcerpt(rope),
                         path);
    auto number = [&](const json &object, const char *name) -> Result<std::optional<double>> {
        auto it = object.find(name);
        if (it == object.end() || it->is_null())
            return std::optional<double>();
        if (!it->is_number() || !std::isfinite(it->get<double>()))
            return makeError(ErrorCode::InvalidInput,
                             key + "." + name + ": expected a number; got " + jsonutil::jsonExcerpt(*it), path);
        return std::optional<double>(it->get<double>());
    };
    for (const char *layerType : {"full_attention", "sliding_attention"})
        if (rope.contains(layerType))
            return makeError(ErrorCode::Unsupported,
                             key + ": parameters per layer type (\"" + layerType + "\") are not implemented", path);

    RopeConfig r;
    r.maxPositions = input.maxPositions;
    r.rotaryDim = input.rotaryDim;
    r.theta = input.modelType == "mixtral" ? 1000000.0 : 10000.0; // the config classes' default_theta
    if (auto top = number(j, "rope_theta"); !top)
        return tl::unexpected(top.error());
    else if (*top)
        r.theta = **top;
    if (auto inside = number(rope, "rope_theta"); !inside)
        return tl::unexpected(inside.error());
    else if (*inside)
        r.theta = **inside;
    if (!(r.theta > 0))
        return makeError(ErrorCode::InvalidInput, "rope_theta: expected a positive number", path);

    std::string type = "default";
    for (const char *name : {"rope_type", "type"}) {
        if (auto it = rope.find(name); it != rope.end() && !it->is_null()) {
            if (!it->is_string())
                return makeError(ErrorCode::InvalidInput,
                                 key + "." + name + ": expected a string; got " + jsonutil::jsonExcerpt(*it), path);
            type = it->get<std::string>();
            break;
        }
    }
    if (input.modelType == "phi3" && (type == "su" || type == "yarn"))
        type = "longrope"; // Phi3Config's backward compatibility
    const auto &types = ropeTypes();
    if (std::find(types.begin(), types.end(), type) == types.end())
        return makeError(ErrorCode::Unsupported,
                         key + ": rope_type \"" + type + "\" is not implemented (implemented: " + joined(types) + ")",
                         path);
    if (input.modelType == "phi3" && type != "default" && type != "longrope")
        return makeError(ErrorCode::Unsupported,
                         key + ": rope_type \"" + type + "\" is not one Phi-3 takes (default or longrope)", path);
    if (input.modelType != "phi3") {
        auto partial = number(rope, "partial_rotary_factor");
        if (!partial)
            return tl::unexpected(partial.error());
        if (*partial && **partial != 1.0)
            return makeError(ErrorCode::Unsupported,
                             key +
                                 ".partial_rotary_factor: rotating part of each head is not implemented for "
                                 "model_type " +
                                 input.modelType,
                             path);
    }
    r.type = type;
    for (auto it = rope.begin(); it != rope.end(); ++it) {
        const std::string &name = it.key();
        if (name == "rope_type" || name == "type" || name == "rope_theta" || name == "partial_rotary_factor" ||
            keysOf(type).count(name))
            continue;
        notes.emplace_back(key, key + "." + name + " is not read for rope_type " + type + " (nor by transformers)");
    }

    auto factor = number(rope, "factor");
    if (!factor)
        return tl::unexpected(factor.error());
    if (type == "linear" || type == "dynamic" || type == "yarn" || type == "llama3") {
        if (!*factor)
            return makeError(ErrorCode::InvalidInput, key + ": rope_type " + type + " needs \"factor\"", path);
        r.factor = **factor;
        if (!(r.factor > 0))
            return makeError(ErrorCode::InvalidInput, key + ".factor: expected a positive number", path);
    }
    if (type == "yarn" || type == "longrope" || type == "llama3") {
        // Phi-3 keeps the pretraining length at the top level (Phi3Config's default 4096), and it wins.
        auto original = input.modelType == "phi3" ? number(j, "original_max_position_embeddings")
                                                  : number(rope, "original_max_position_embeddings");
        if (!original)
            return tl::unexpected(original.error());
        r.originalMaxPositions =
            *original ? static_cast<int64_t>(**original) : (input.modelType == "phi3" ? 4096 : input.maxPositions);
        if (r.originalMaxPositions <= 0)
            return makeError(ErrorCode::InvalidInput,
                             key + ": original_max_position_embeddings must be a positive integer", path);
    }
    auto optional = [&](const char *name, std::optional<double> &out) -> Result<void> {
        auto value = number(rope, name);
        if (!value)
            return tl::unexpected(value.error());
        out = *value;
        return {};
    };
    if (type == "yarn" || type == "longrope")
        if (auto ok = optional("attention_factor", r.attentionFactor); !ok)
            return tl::unexpected(ok.error());
    if (type == "yarn") {
        for (auto [name, out] :
             {std::pair<const char *, double *>{"beta_fast", &r.betaFast}, {"beta_slow", &r.betaSlow}}) {
            auto value = number(rope, name);
            if (!value)
                return tl::unexpected(value.error());
            if (*value && **value != 0) // transformers: `get(...) or default`
                *out = **value;
        }
        for (auto [name, out] : {std::pair<const char *, std::optional<double> *>{"mscale", &r.mscale},
                                 {"mscale_all_dim", &r.mscaleAllDim}})
            if (auto ok = optional(name, *out); !ok)
                return tl::unexpected(ok.error());
        if (auto it = rope.find("truncate"); it != rope.end() && !it->is_null()) {
            if (!it->is_boolean())
                return makeError(ErrorCode::InvalidInput, key + ".truncate: expected true or false", path);
            r.truncate = it->get<bool>();
        }
    }
    if (type == "llama3") {
        for (auto [name, out] : {std::pair<const char *, double *>{"low_freq_factor", &r.lowFreqFactor},
                                 {"high_freq_factor", &r.highFreqFactor}}) {
            auto value = number(rope, name);
            if (!value)
                return tl::unexpected(value.error());
            if (!*value)
                return makeError(ErrorCode::InvalidInput, key + ": rope_type llama3 needs \"" + name + "\"", path);
            *out = **value;
        }
        if (!(r.highFreqFactor > r.lowFreqFactor))
            return makeError(ErrorCode::InvalidInput, key + ": high_freq_factor must exceed low_freq_factor", path);
    }
    if (type == "longrope") {
        r.factor = *factor ? **factor : static_cast<double>(input.maxPositions) / r.originalMaxPositions;
        for (auto [name, out] : {std::pair<const char *, std::vector<double> *>{"short_factor", &r.shortFactor},
                                 {"long_factor", &r.longFactor}}) {
            auto it = rope.find(name);
            const size_t want = static_cast<size_t>(r.rotaryDim / 2);
            if (it == rope.end() || !it->is_array() || it->size() != want)
                return makeError(ErrorCode::InvalidInput,
                                 key + "." + name + ": expected a list of " + std::to_string(want) +
                                     " numbers (rotary dimensions / 2)",
                                 path);
            for (const json &v : *it) {
                if (!v.is_number())
                    return makeError(ErrorCode::InvalidInput,
                                     key + "." + name + ": expected numbers; got " + jsonutil::jsonExcerpt(v), path);
                out->push_back(v.get<double>());
            }
        }
    }
    return r;
}

} // namespace accel::inference
