// JSON text <-> ConfigValue. Reading goes through the input guard (jsonutil::parseJson: size,
// depth, no exceptions); line numbers for keys are recovered by reading the same text as
// YAML (JSON is YAML), which only ever adds positions, never values. Writing follows Python's
// json.dumps(indent=2, sort_keys=True) with ensure_ascii.
#include "core/common/jsondocument.h"
#include "core/config/configio.h"
#include "core/config/configvalue.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace accel::config {

namespace {

constexpr int MaxDepth = 64;

bool fromJson(const nlohmann::json &json, ConfigValue &out, int depth, std::string &error)
{
    if (depth > MaxDepth) {
        error = "nesting is deeper than " + std::to_string(MaxDepth) + " levels";
        return false;
    }
    switch (json.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
        out = ConfigValue::null();
        return true;
    case nlohmann::json::value_t::boolean:
        out = ConfigValue::fromBool(json.get<bool>());
        return true;
    case nlohmann::json::value_t::number_integer:
        out = ConfigValue::fromInt(json.get<std::int64_t>());
        return true;
    case nlohmann::json::value_t::number_unsigned: {
        const auto value = json.get<std::uint64_t>();
        if (value > static_cast<std::uint64_t>(INT64_MAX)) {
            out = ConfigValue::fromFloat(static_cast<double>(value));
            return true;
        }
        out = ConfigValue::fromInt(static_cast<std::int64_t>(value));
        return true;
    }
    case nlohmann::json::value_t::number_float:
        out = ConfigValue::fromFloat(json.get<double>());
        return true;
    case nlohmann::json::value_t::string:
        out = ConfigValue::fromString(json.get<std::string>());
        return true;
    case nlohmann::json::value_t::array:
        out = ConfigValue::list();
        for (const auto &item : json) {
            ConfigValue child;
            if (!fromJson(item, child, depth + 1, error))
                return false;
            out.items.push_back(std::move(child));
        }
        return true;
    case nlohmann::json::value_t::object:
        out = ConfigValue::map();
        for (auto it = json.begin(); it != json.end(); ++it) {
            ConfigValue child;
            if (!fromJson(it.value(), child, depth + 1, error))
                return false;
            out.members.emplace(it.key(), std::move(child));
        }
        return true;
    case nlohmann::json::value_t::binary:
        break;
    }
    error = "unsupported JSON value";
    return false;
}

// Copies key/item line numbers from the YAML reading of the same text.
void copyLines(ConfigValue &target, const ConfigValue &positions)
{
    if (target.type == ConfigValue::Type::Map && positions.type == ConfigValue::Type::Map) {
        for (auto &[key, member] : target.members) {
            auto it = positions.members.find(key);
            if (it != positions.members.end()) {
                member.line = it->second.line;
                copyLines(member, it->second);
            }
        }
    } else if (target.type == ConfigValue::Type::List && positions.type == ConfigValue::Type::List &&
               target.items.size() == positions.items.size()) {
        for (size_t i = 0; i < target.items.size(); ++i) {
            target.items[i].line = positions.items[i].line;
            copyLines(target.items[i], positions.items[i]);
        }
    }
}

void appendEscaped(std::string &out, const std::string &text)
{
    out += '"';
    size_t i = 0;
    while (i < text.size()) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        char buffer[16];
        if (c == '"') {
            out += "\\\"";
        } else if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\b') {
            out += "\\b";
        } else if (c == '\f') {
            out += "\\f";
        } else if (c < 0x20 || c == 0x7F) {
            std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
            out += buffer;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
        } else {
            // ensure_ascii: decode one UTF-8 sequence, write \uXXXX (surrogate pairs above the BMP).
            size_t length = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
            std::uint32_t cp = 0xFFFD;
            if (length > 1 && i + length <= text.size()) {
                cp = length == 2 ? (c & 0x1F) : length == 3 ? (c & 0x0F) : (c & 0x07);
                for (size_t k = 1; k < length; ++k) {
                    const unsigned char cc = static_cast<unsigned char>(text[i + k]);
                    if ((cc >> 6) != 0x2) {
                        cp = 0xFFFD;
                        length = 1;
                        break;
                    }
                    cp = (cp << 6) | (cc & 0x3F);
                }
            } else {
                length = 1;
            }
            if (cp >= 0x10000) {
                const std::uint32_t v = cp - 0x10000;
                std::snprintf(buffer, sizeof buffer, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            } else {
                std::snprintf(buffer, sizeof buffer, "\\u%04x", cp);
            }
            out += buffer;
            i += length;
            continue;
        }
        ++i;
    }
    out += '"';
}

void emit(std::string &out, const ConfigValue &value, int indent)
{
    switch (value.type) {
    case ConfigValue::Type::Null:
        out += "null";
        return;
    case ConfigValue::Type::Bool:
        out += value.boolean ? "true" : "false";
        return;
    case ConfigValue::Type::Int:
        out += std::to_string(value.integer);
        return;
    case ConfigValue::Type::Float:
        if (std::isnan(value.real))
            out += "NaN";
        else if (std::isinf(value.real))
            out += value.real > 0 ? "Infinity" : "-Infinity";
        else
            out += pythonFloatRepr(value.real);
        return;
    case ConfigValue::Type::String:
        appendEscaped(out, value.text);
        return;
    case ConfigValue::Type::List: {
        if (value.items.empty()) {
            out += "[]";
            return;
        }
        out += "[";
        bool first = true;
        for (const ConfigValue &item : value.items) {
            out += first ? "\n" : ",\n";
            first = false;
            out.append(static_cast<size_t>(indent + 2), ' ');
            emit(out, item, indent + 2);
        }
        out += "\n";
        out.append(static_cast<size_t>(indent), ' ');
        out += "]";
        return;
    }
    case ConfigValue::Type::Map: {
        if (value.members.empty()) {
            out += "{}";
            return;
        }
        out += "{";
        bool first = true;
        for (const auto &[key, member] : value.members) {
            out += first ? "\n" : ",\n";
            first = false;
            out.append(static_cast<size_t>(indent + 2), ' ');
            appendEscaped(out, key);
            out += ": ";
            emit(out, member, indent + 2);
        }
        out += "\n";
        out.append(static_cast<size_t>(indent), ' ');
        out += "}";
        return;
    }
    }
}

} // namespace

Result<ConfigValue> parseJsonText(const std::string &text, const std::string &fileName, Diagnostics *warnings)
{
    jsonutil::JsonLimits limits;
    limits.maxBytes = kMaxConfigBytes;
    auto parsed = jsonutil::parseJson(text, fileName, limits);
    if (!parsed) {
        // "not valid JSON: parse error at line 3, column 5: syntax error ..." -> the line as context, the reason.
        const std::string &message = parsed.error().message;
        const std::string marker = "parse error at line ";
        const size_t at = message.find(marker);
        const size_t colon = at == std::string::npos ? std::string::npos : message.find(": ", at);
        if (colon == std::string::npos)
            return tl::unexpected(parsed.error()); // nested too deep, too large
        const int line = std::atoi(message.c_str() + at + marker.size());
        return makeError(ErrorCode::InvalidInput, "invalid JSON: " + message.substr(colon + 2),
                         fileName + ": line " + std::to_string(line));
    }
    const nlohmann::json &json = *parsed;
    ConfigValue root;
    std::string error;
    if (!fromJson(json, root, 0, error))
        return makeError(ErrorCode::InvalidInput, error, fileName);
    root.line = 1;
    if (auto positions = parseYamlText(text, fileName, warnings))
        copyLines(root, *positions);
    return root;
}

std::string emitJson(const ConfigValue &document)
{
    std::string out;
    emit(out, document, 0);
    out += '\n';
    return out;
}

} // namespace accel::config
