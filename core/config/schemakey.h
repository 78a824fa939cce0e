// One key of the typed config by its dotted name ("num_processes", "fsdp_config.fsdp_version"),
// reached through the schema's visitor functions (core/config/configschema.h): an editor that
// reads and writes keys by name (the studio's Configure form) needs no member pointer, type or
// list of values of its own.
#pragma once

#include "core/config/configschema.h"

#include <string>

namespace accel::config::schema {

namespace detail {

// Forwards to `visitor` the one call whose key, under `prefix`, is `dottedKey`.
template <typename V>
struct OneKey {
    const std::string &dottedKey;
    std::string prefix;
    V &visitor;
    bool found = false;

    bool is(const char *key) const
    {
        return dottedKey.size() == prefix.size() + std::char_traits<char>::length(key) &&
               dottedKey.compare(0, prefix.size(), prefix) == 0 &&
               dottedKey.compare(prefix.size(), std::string::npos, key) == 0;
    }
    void flag(const char *key, std::optional<bool> &value)
    {
        if (is(key))
            found = true, visitor.flag(key, value);
    }
    void integer(const char *key, std::optional<std::int64_t> &value, Range range)
    {
        if (is(key))
            found = true, visitor.integer(key, value, range);
    }
    void number(const char *key, std::optional<double> &value)
    {
        if (is(key))
            found = true, visitor.number(key, value);
    }
    void text(const char *key, std::optional<std::string> &value, const Choices &choices)
    {
        if (is(key))
            found = true, visitor.text(key, value, choices);
    }
    void boolOrText(const char *key, std::optional<BoolOrString> &value, const Choices &choices)
    {
        if (is(key))
            found = true, visitor.boolOrText(key, value, choices);
    }
    void textList(const char *key, std::optional<std::vector<std::string>> &value)
    {
        if (is(key))
            found = true, visitor.textList(key, value);
    }
    void flagList(const char *key, std::optional<std::vector<bool>> &value, size_t size,
                  std::optional<BoolOrString> &written)
    {
        if (is(key))
            found = true, visitor.flagList(key, value, size, written);
    }
};

} // namespace detail

// Calls `visitor`'s function for the key `dottedKey` of a LOCAL_MACHINE config (a top-level
// scalar or "block.key"), on that key's member of `config` (whatever its compute_environment). False when the schema
// does not declare the key (compute_environment, distributed_type and mixed_precision are the reader's and writer's
// own).
template <typename V>
bool visitKey(ClusterConfig &config, const std::string &dottedKey, V &visitor)
{
    detail::OneKey<V> top{dottedKey, std::string(), visitor};
    visitClusterScalars(config, top);
    if (top.found)
        return true;
    bool found = false;
    forEachLocalBlock(config, [&](const char *block, auto &&visit) {
        detail::OneKey<V> nested{dottedKey, std::string(block) + ".", visitor};
        visit(nested);
        found = found || nested.found;
    });
    return found;
}

} // namespace accel::config::schema
