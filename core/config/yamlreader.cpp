// YAML text -> ConfigValue: the input guard (core/common/yamldocument.h) parses and checks the
// text, and this file types plain scalars the way PyYAML's safe loader does.
#include "core/config/configio.h"
#include "core/config/configvalue.h"

#include "core/common/utf8.h"
#include "core/common/yamldocument.h"

#include <vector>

namespace accel::config {

namespace {

// yaml-cpp decodes the escapes \xXX, \N and \_ of double-quoted scalars to a single raw byte
// instead of the UTF-8 of that code point (PyYAML writes "\xE9" for an e-acute). The input was
// checked to be UTF-8, so a stray byte here can only come from such an escape: re-encode it.
std::string latin1Repaired(const std::string &text)
{
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        const size_t length = utf8::validCharLength(text, i);
        if (length > 0) {
            out.append(text, i, length);
            i += length;
            continue;
        }
        const unsigned char byte = static_cast<unsigned char>(text[i]);
        out += static_cast<char>(0xC0 | (byte >> 6));
        out += static_cast<char>(0x80 | (byte & 0x3F));
        ++i;
    }
    return out;
}

struct Converter {
    const std::string &fileName;
    Diagnostics *warnings = nullptr;
    std::string error;
    int errorLine = 0;

    bool fail(int line, std::string message)
    {
        if (error.empty()) {
            error = std::move(message);
            errorLine = line;
        }
        return false;
    }

    bool scalar(const YAML::Node &node, ConfigValue &out)
    {
        const std::string &tag = node.Tag();
        const std::string text = latin1Repaired(node.Scalar());
        if (tag == "?") {
            out = resolvePlainScalar(text);
            return true;
        }
        if (tag == "!" || tag == "tag:yaml.org,2002:str") {
            out = ConfigValue::fromString(text);
            return true;
        }
        const std::string prefix = "tag:yaml.org,2002:";
        if (tag.rfind(prefix, 0) == 0) {
            const std::string kind = tag.substr(prefix.size());
            ConfigValue typed = resolvePlainScalar(text);
            const bool matches =
                (kind == "int" && typed.type == ConfigValue::Type::Int) ||
                (kind == "float" && (typed.type == ConfigValue::Type::Float || typed.type == ConfigValue::Type::Int)) ||
                (kind == "bool" && typed.type == ConfigValue::Type::Bool) ||
                (kind == "null" && typed.type == ConfigValue::Type::Null);
            if (matches) {
                if (kind == "float" && typed.type == ConfigValue::Type::Int) {
                    typed.type = ConfigValue::Type::Float;
                    typed.real = static_cast<double>(typed.integer);
                }
                out = typed;
                return true;
            }
            return fail(node.Mark().line + 1, "'" + text + "' is not a valid !!" + kind);
        }
        return fail(node.Mark().line + 1, "unsupported YAML tag '" + tag + "'");
    }

    // The guard has bounded the document (depth, values and text with aliases expanded).
    bool convert(const YAML::Node &node, ConfigValue &out)
    {
        switch (node.Type()) {
        case YAML::NodeType::Undefined:
        case YAML::NodeType::Null:
            out = ConfigValue::null();
            return true;
        case YAML::NodeType::Scalar:
            return scalar(node, out);
        case YAML::NodeType::Sequence: {
            out = ConfigValue::list();
            for (const YAML::Node &item : node) {
                ConfigValue child;
                if (!convert(item, child))
                    return false;
                child.line = item.Mark().line + 1;
                out.items.push_back(std::move(child));
            }
            return true;
        }
        case YAML::NodeType::Map: {
            out = ConfigValue::map();
            for (auto it = node.begin(); it != node.end(); ++it) {
                // A copy: `it->first` lives in a proxy that dies at the end of this statement.
                const YAML::Node key = it->first;
                const int keyLine = key.Mark().line + 1;
                if (!key.IsScalar())
                    return fail(keyLine, "mapping keys must be plain names");
                const std::string name = latin1Repaired(key.Scalar());
                ConfigValue child;
                if (!convert(it->second, child))
                    return false;
                child.line = keyLine;
                // PyYAML keeps the last value of a repeated key (and Accelerate loads such files).
                auto existing = out.members.find(name);
                if (existing != out.members.end() && warnings)
                    warnings->push_back(Diagnostic{Severity::Warning, fileName, keyLine, name,
                                                   "repeated key (first at line " +
                                                       std::to_string(existing->second.line) +
                                                       "); the last value is used, as Accelerate's YAML loader does"});
                out.members[name] = std::move(child);
            }
            return true;
        }
        }
        return fail(0, "unreadable node");
    }
};

} // namespace

Result<ConfigValue> parseYamlText(const std::string &text, const std::string &fileName, Diagnostics *warnings)
{
    InputLimits limits;
    limits.maxBytes = kMaxConfigBytes;
    limits.subject = "a config file";
    auto document = yamlutil::parseYaml(text, fileName, limits);
    if (!document)
        return tl::unexpected(document.error());
    if (document->IsNull())
        return ConfigValue::null();
    try {
        Converter converter{fileName, warnings, {}, 0};
        ConfigValue root;
        if (!converter.convert(*document, root))
            return makeError(ErrorCode::InvalidInput, converter.error,
                             converter.errorLine > 0 ? fileName + ": line " + std::to_string(converter.errorLine)
                                                     : fileName);
        root.line = 1;
        return root;
    } catch (const YAML::Exception &e) {
        return makeError(ErrorCode::InvalidInput, "invalid YAML: " + e.msg,
                         e.mark.is_null() ? fileName : fileName + ": line " + std::to_string(e.mark.line + 1));
    }
}

} // namespace accel::config
