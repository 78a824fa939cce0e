#include "core/config/configvalue.h"

#include "core/common/text.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <regex>

namespace accel::config {

ConfigValue ConfigValue::fromBool(bool value)
{
    ConfigValue v;
    v.type = Type::Bool;
    v.boolean = value;
    return v;
}

ConfigValue ConfigValue::fromInt(std::int64_t value)
{
    ConfigValue v;
    v.type = Type::Int;
    v.integer = value;
    return v;
}

ConfigValue ConfigValue::fromFloat(double value)
{
    ConfigValue v;
    v.type = Type::Float;
    v.real = value;
    return v;
}

ConfigValue ConfigValue::fromString(std::string value)
{
    ConfigValue v;
    v.type = Type::String;
    v.text = std::move(value);
    return v;
}

ConfigValue ConfigValue::list()
{
    ConfigValue v;
    v.type = Type::List;
    return v;
}

ConfigValue ConfigValue::map()
{
    ConfigValue v;
    v.type = Type::Map;
    return v;
}

const char *ConfigValue::typeName() const
{
    switch (type) {
    case Type::Null:
        return "null";
    case Type::Bool:
        return "a boolean";
    case Type::Int:
        return "an integer";
    case Type::Float:
        return "a number";
    case Type::String:
        return "a string";
    case Type::List:
        return "a list";
    case Type::Map:
        return "a mapping";
    }
    return "a value";
}

std::string ConfigValue::describe() const
{
    switch (type) {
    case Type::Null:
        return "null";
    case Type::Bool:
        return plain && !text.empty() ? text : (boolean ? "true" : "false");
    case Type::Int:
        return plain && !text.empty() ? text : std::to_string(integer);
    case Type::Float:
        return plain && !text.empty() ? text : pythonFloatRepr(real);
    case Type::String:
        return plain ? text : "'" + text + "'";
    case Type::List:
        return "a list";
    case Type::Map:
        return "a mapping";
    }
    return {};
}

namespace {

struct Resolvers {
    std::regex boolean{"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$"};
    std::regex floating{"^(?:[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?"
                        "|\\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
                        "|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*"
                        "|[-+]?\\.(?:inf|Inf|INF)"
                        "|\\.(?:nan|NaN|NAN))$"};
    std::regex integer{"^(?:[-+]?0b[0-1_]+"
                       "|[-+]?0[0-7_]+"
                       "|[-+]?(?:0|[1-9][0-9_]*)"
                       "|[-+]?0x[0-9a-fA-F_]+"
                       "|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$"};
    std::regex null{"^(?:~|null|Null|NULL|)$"};
    std::regex timestamp{"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
                         "|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?"
                         "(?:[Tt]|[ \\t]+)[0-9][0-9]?"
                         ":[0-9][0-9]:[0-9][0-9](?:\\.[0-9]*)?"
                         "(?:[ \\t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$"};
};

const Resolvers &resolvers()
{
    static const Resolvers instance;
    return instance;
}

std::string withoutUnderscores(const std::string &text)
{
    std::string out;
    for (char c : text)
        if (c != '_')
            out += c;
    return out;
}

// Base-60 digits "1:30:05" (YAML 1.1), returns false on overflow.
bool sexagesimal(const std::string &digits, long double &out)
{
    long double value = 0;
    size_t start = 0;
    while (start <= digits.size()) {
        const size_t colon = digits.find(':', start);
        const std::string part = digits.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        value = value * 60 + std::strtold(part.c_str(), nullptr);
        if (colon == std::string::npos)
            break;
        start = colon + 1;
    }
    out = value;
    return std::isfinite(static_cast<double>(value));
}

bool constructInt(const std::string &source, std::int64_t &out)
{
    std::string value = withoutUnderscores(source);
    int sign = 1;
    if (!value.empty() && (value[0] == '-' || value[0] == '+')) {
        sign = value[0] == '-' ? -1 : 1;
        value.erase(0, 1);
    }
    if (value.empty())
        return false;
    errno = 0;
    unsigned long long magnitude = 0;
    char *end = nullptr;
    if (value == "0") {
        magnitude = 0;
    } else if (value.rfind("0b", 0) == 0 || value.rfind("0x", 0) == 0) {
        const std::string digits = value.substr(2);
        if (digits.empty())
            return false;
        magnitude = std::strtoull(digits.c_str(), &end, value[1] == 'b' ? 2 : 16);
    } else if (value.find(':') != std::string::npos) {
        long double v = 0;
        if (!sexagesimal(value, v) || v > static_cast<long double>(std::numeric_limits<std::int64_t>::max()))
            return false;
        magnitude = static_cast<unsigned long long>(v);
    } else if (value[0] == '0') {
        magnitude = std::strtoull(value.c_str(), &end, 8);
    } else {
        magnitude = std::strtoull(value.c_str(), &end, 10);
    }
    if (errno == ERANGE || magnitude > static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max()))
        return false;
    out = sign * static_cast<std::int64_t>(magnitude);
    return true;
}

double constructFloat(const std::string &source)
{
    std::string value = text::lower(withoutUnderscores(source));
    double sign = 1;
    if (!value.empty() && (value[0] == '-' || value[0] == '+')) {
        sign = value[0] == '-' ? -1 : 1;
        value.erase(0, 1);
    }
    if (value == ".inf")
        return sign * std::numeric_limits<double>::infinity();
    if (value == ".nan")
        return std::numeric_limits<double>::quiet_NaN();
    if (value.find(':') != std::string::npos) {
        long double v = 0;
        sexagesimal(value, v);
        return sign * static_cast<double>(v);
    }
    return sign * std::strtod(value.c_str(), nullptr);
}

} // namespace

// PyYAML only tries the resolvers registered for a scalar's first character; doing the same
// spares the regexes for nearly every config value (names, paths, enum values).
bool mayBeTyped(const std::string &text)
{
    if (text.empty())
        return true;
    static const std::string firstCharacters = "yYnNtTfFoO-+0123456789.~=<";
    return firstCharacters.find(text[0]) != std::string::npos;
}

ConfigValue resolvePlainScalar(const std::string &text)
{
    const Resolvers &r = resolvers();
    ConfigValue v;
    v.plain = true;
    v.text = text;
    if (text.size() > 64 || !mayBeTyped(text)) { // no typed scalar is this long; spare the regexes
        v.type = ConfigValue::Type::String;
        return v;
    }
    if (std::regex_match(text, r.null)) {
        v.type = ConfigValue::Type::Null;
    } else if (std::regex_match(text, r.boolean)) {
        v.type = ConfigValue::Type::Bool;
        const char c = text[0];
        v.boolean = c == 'y' || c == 'Y' || c == 't' || c == 'T' ||
                    ((c == 'o' || c == 'O') && (text[1] == 'n' || text[1] == 'N'));
    } else if (std::regex_match(text, r.integer)) {
        v.type = ConfigValue::Type::Int;
        if (!constructInt(text, v.integer)) {
            // Python's int has no limit; out of range here is reported as a float so the type
            // check upstream names a number.
            v.type = ConfigValue::Type::Float;
            v.real = constructFloat(text);
        }
    } else if (std::regex_match(text, r.floating)) {
        v.type = ConfigValue::Type::Float;
        v.real = constructFloat(text);
    } else {
        // Timestamps stay text: no config key holds a date.
        v.type = ConfigValue::Type::String;
    }
    return v;
}

bool plainScalarIsString(const std::string &text)
{
    const Resolvers &r = resolvers();
    if (text.size() > 64 || !mayBeTyped(text))
        return true;
    return !(std::regex_match(text, r.null) || std::regex_match(text, r.boolean) || std::regex_match(text, r.integer) ||
             std::regex_match(text, r.floating) || std::regex_match(text, r.timestamp) || text == "=" || text == "<<");
}

std::string pythonFloatRepr(double value)
{
    if (std::isnan(value))
        return "nan";
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    if (value == 0)
        return std::signbit(value) ? "-0.0" : "0.0";
    // Shortest digit string that reads back to the same double.
    char buffer[64];
    int precision = 1;
    for (; precision <= 17; ++precision) {
        std::snprintf(buffer, sizeof buffer, "%.*e", precision - 1, value);
        if (std::strtod(buffer, nullptr) == value)
            break;
    }
    std::string s(buffer);
    const bool negative = s[0] == '-';
    if (negative)
        s.erase(0, 1);
    const size_t e = s.find('e');
    std::string digits;
    for (size_t i = 0; i < e; ++i)
        if (s[i] != '.')
            digits += s[i];
    while (digits.size() > 1 && digits.back() == '0')
        digits.pop_back();
    const int exponent = std::atoi(s.c_str() + e + 1);
    const int decpt = exponent + 1; // value = 0.DIGITS x 10^decpt
    std::string out;
    if (decpt <= -4 || decpt > 16) {
        out = digits.substr(0, 1);
        if (digits.size() > 1)
            out += "." + digits.substr(1);
        char exp[16];
        std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        out += exp;
    } else if (decpt <= 0) {
        out = "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
        out = digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
    } else {
        out = digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
    }
    return negative ? "-" + out : out;
}

} // namespace accel::config
