// A YAML/JSON document tree with the scalar types PyYAML and Python's json module produce, and
// the codecs between text and tree: YAML read with yaml-cpp and typed by YAML 1.1 rules (as
// PyYAML's safe loader does), YAML written byte-for-byte like PyYAML's safe_dump, JSON read with
// nlohmann::json and written like json.dumps(indent=2, sort_keys=True). The typed model
// (clusterconfig.h) is converted to and from this tree.
#pragma once

#include "core/common/result.h"
#include "core/config/diagnostic.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace accel::config {

struct ConfigValue {
    enum class Type { Null, Bool, Int, Float, String, List, Map };

    Type type = Type::Null;
    bool boolean = false;
    std::int64_t integer = 0;
    double real = 0.0;
    std::string text;                           // String: the value. Scalars read from YAML: the text as written.
    bool plain = false;                         // read from an unquoted YAML scalar (so `NO` may stand for the text NO)
    int line = 0;                               // 1-based line of the key (map members) or item (lists); 0 = unknown
    std::vector<ConfigValue> items;             // List
    std::map<std::string, ConfigValue> members; // Map, sorted like Python's sort_keys

    static ConfigValue null() { return {}; }
    static ConfigValue fromBool(bool value);
    static ConfigValue fromInt(std::int64_t value);
    static ConfigValue fromFloat(double value);
    static ConfigValue fromString(std::string value);
    static ConfigValue list();
    static ConfigValue map();

    bool isScalar() const { return type != Type::List && type != Type::Map; }
    // "a string", "an integer", ... for messages.
    const char *typeName() const;
    // The value as the file showed it: 'no' for strings read quoted, 1.0, true, [...], {...}.
    std::string describe() const;
};

// YAML 1.1 implicit typing of a plain scalar, as PyYAML's resolver does (yes/no/on/off are
// booleans, 010 is octal, 1e5 without a dot is a string, "" and ~ are null).
ConfigValue resolvePlainScalar(const std::string &text);
// True when `text`, written without quotes, would read back as the same string (the check
// PyYAML's emitter makes before writing a plain scalar).
bool plainScalarIsString(const std::string &text);

// Python's repr() of a float ("1.0", "1e-05", "1e+16", "inf").
std::string pythonFloatRepr(double value);

// Parsers: syntax errors come back as InvalidInput with "line N: ..." context. A repeated key keeps
// its last value, as PyYAML and Python's json do; the YAML parser reports it to `warnings` when given.
// Aliases may expand to at most 100000 values in all (an alias bomb is an error, not an allocation).
Result<ConfigValue> parseYamlText(const std::string &text, const std::string &fileName,
                                  Diagnostics *warnings = nullptr);
Result<ConfigValue> parseJsonText(const std::string &text, const std::string &fileName,
                                  Diagnostics *warnings = nullptr);

// yaml.safe_dump(value) with PyYAML's defaults (block style, sorted keys, width 80, indent 2).
std::string emitYaml(const ConfigValue &document);
// json.dumps(value, indent=2, sort_keys=True) + "\n" (ensure_ascii like Python).
std::string emitJson(const ConfigValue &document);

} // namespace accel::config
