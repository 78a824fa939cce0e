// YAML text -> ConfigValue, through yaml-cpp (the one place that calls it and catches its
// exceptions), typing plain scalars the way PyYAML's safe loader does.
#include "core/config/configvalue.h"

// yaml-cpp 0.7's node headers trip GCC 12's dangling-pointer analysis (a false positive in their
// iterator code); silence it for them only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include <yaml-cpp/yaml.h>
#pragma GCC diagnostic pop

#include <cstdio>
#include <exception>

namespace accel::config {

namespace {

constexpr int MaxDepth = 64;
// Values a config may hold after its aliases are expanded. A real config has a few hundred; an
// alias of an alias of a list (a "billion laughs" file) expands without bound, 430 bytes to
// gigabytes, so expansion stops here with an error.
constexpr size_t MaxNodes = 100000;

// Length of the valid UTF-8 sequence at text[i], 0 when there is none.
size_t utf8Length(const std::string &text, size_t i)
{
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > text.size())
        return 0;
    for (size_t k = 1; k < length; ++k)
        if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2)
            return 0;
    if (length == 2 && c < 0xC2)
        return 0; // overlong
    return length;
}

// yaml-cpp decodes the escapes \xXX, \N and \_ of double-quoted scalars to a single raw byte
// instead of the UTF-8 of that code point (PyYAML writes "\xE9" for an e-acute). The input was
// checked to be UTF-8, so a stray byte here can only come from such an escape: re-encode it.
std::string latin1Repaired(const std::string &text)
{
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        const size_t length = utf8Length(text, i);
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

// What PyYAML's reader refuses before parsing: text that is not UTF-8, and control characters
// other than tab, line feed and carriage return. Returns "" or the problem, with its line.
std::string unreadableCharacter(const std::string &text, int &line)
{
    line = 1;
    for (size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        const size_t length = utf8Length(text, i);
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", c);
        if (length == 0)
            return std::string("byte ") + hex + " is not UTF-8 (config files are UTF-8 text)";
        if (length == 1 && c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            return std::string("control character ") + hex + " is not allowed";
        if (length == 1 && c == 0x7F)
            return std::string("control character ") + hex + " is not allowed";
        if (c == '\n')
            ++line;
        i += length;
    }
    return {};
}

struct Converter {
    const std::string &fileName;
    Diagnostics *warnings = nullptr;
    std::string error;
    int errorLine = 0;
    size_t nodes = 0;

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

    bool convert(const YAML::Node &node, ConfigValue &out, int depth)
    {
        if (depth > MaxDepth)
            return fail(node.Mark().line + 1, "nesting is deeper than " + std::to_string(MaxDepth) + " levels");
        if (++nodes > MaxNodes)
            return fail(node.Mark().line + 1, "more than " + std::to_string(MaxNodes) +
                                                  " values once YAML aliases (*name) are expanded; a config "
                                                  "file has a few hundred");
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
                if (!convert(item, child, depth + 1))
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
                if (!convert(it->second, child, depth + 1))
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

// yaml-cpp 0.7 loops forever, or allocates until memory runs out, on a ',' that starts a token
// outside any [ ] or { } (",x", "'a' ,", "[a],"). Such text is invalid YAML anyway (PyYAML
// refuses it too), so it is caught here before yaml-cpp sees it. Returns the 1-based line of the
// first such comma, or 0.
int strayFlowComma(const std::string &text)
{
    int line = 1;
    int flowDepth = 0;
    char quote = 0;
    bool comment = false;
    int blockScalarIndent = -1; // inside a | or > scalar: lines indented more than this are content
    size_t lineStart = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (i == lineStart && blockScalarIndent >= 0) {
            size_t j = i;
            while (j < text.size() && text[j] == ' ')
                ++j;
            const bool blank = j >= text.size() || text[j] == '\n';
            if (blank || static_cast<int>(j - i) > blockScalarIndent) {
                const size_t end = text.find('\n', i);
                if (end == std::string::npos)
                    return 0;
                i = end;
                ++line;
                lineStart = end + 1;
                continue;
            }
            blockScalarIndent = -1;
        }
        if (c == '\n') {
            ++line;
            lineStart = i + 1;
            comment = false;
            if (quote == 0 && flowDepth == 0) {
                // "key: |" or "- >-" ends the line: a block scalar follows.
                size_t end = i;
                while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == '\r'))
                    --end;
                size_t start = end;
                while (start > 0 && text[start - 1] != '\n' && text[start - 1] != ' ')
                    --start;
                const std::string last = text.substr(start, end - start);
                if (!last.empty() && (last[0] == '|' || last[0] == '>')) {
                    size_t indentStart = start;
                    while (indentStart > 0 && text[indentStart - 1] != '\n')
                        --indentStart;
                    size_t k = indentStart;
                    while (k < text.size() && text[k] == ' ')
                        ++k;
                    blockScalarIndent = static_cast<int>(k - indentStart);
                }
            }
            continue;
        }
        if (comment)
            continue;
        if (quote) {
            if (quote == '"' && c == '\\')
                ++i;
            else if (c == quote)
                quote = 0;
            continue;
        }
        const bool tokenStart = i == lineStart || text[i - 1] == ' ' || text[i - 1] == '\t';
        if (c == '#' && tokenStart) {
            comment = true;
        } else if ((c == '"' || c == '\'') &&
                   (tokenStart || flowDepth > 0 || text[i - 1] == '[' || text[i - 1] == '{')) {
            quote = c;
        } else if (c == '[' || c == '{') {
            if (tokenStart || flowDepth > 0)
                ++flowDepth;
        } else if ((c == ']' || c == '}') && flowDepth > 0) {
            --flowDepth;
        } else if (c == ',' && flowDepth == 0) {
            // Inside a plain scalar ("0,1,3", "a , b") a comma is text; anywhere else it starts a token.
            size_t p = i;
            while (p > lineStart && (text[p - 1] == ' ' || text[p - 1] == '\t'))
                --p;
            if (p == lineStart)
                return line;
            const char before = text[p - 1];
            if (before == ':' || before == '-' || before == '?' || before == '"' || before == '\'' || before == ']' ||
                before == '}')
                return line;
            size_t wordStart = p;
            while (wordStart > lineStart && text[wordStart - 1] != ' ' && text[wordStart - 1] != '\t')
                --wordStart;
            if (text[wordStart] == '!' || text[wordStart] == '&' || text[wordStart] == '*')
                return line;
        }
    }
    return 0;
}

} // namespace

Result<ConfigValue> parseYamlText(const std::string &text, const std::string &fileName, Diagnostics *warnings)
{
    int badLine = 0;
    if (const std::string problem = unreadableCharacter(text, badLine); !problem.empty())
        return makeError(ErrorCode::InvalidInput, "invalid YAML: " + problem,
                         fileName + ": line " + std::to_string(badLine));
    if (const int line = strayFlowComma(text))
        return makeError(ErrorCode::InvalidInput, "invalid YAML: ',' outside [ ] or { } cannot start a value",
                         fileName + ": line " + std::to_string(line));
    try {
        const std::vector<YAML::Node> documents = YAML::LoadAll(text);
        if (documents.size() > 1)
            return makeError(ErrorCode::InvalidInput,
                             "expected a single YAML document, found " + std::to_string(documents.size()), fileName);
        if (documents.empty())
            return ConfigValue::null();
        Converter converter{fileName, warnings, {}, 0, 0};
        ConfigValue root;
        if (!converter.convert(documents.front(), root, 0)) {
            const std::string context =
                converter.errorLine > 0 ? fileName + ": line " + std::to_string(converter.errorLine) : fileName;
            return makeError(ErrorCode::InvalidInput, converter.error, context);
        }
        root.line = 1;
        return root;
    } catch (const YAML::Exception &e) {
        // e.what() repeats the position; e.msg is the bare reason.
        const std::string context =
            e.mark.is_null() ? fileName : fileName + ": line " + std::to_string(e.mark.line + 1);
        return makeError(ErrorCode::InvalidInput, "invalid YAML: " + e.msg, context);
    } catch (const std::exception &e) {
        return makeError(ErrorCode::InvalidInput, std::string("invalid YAML: ") + e.what(), fileName);
    }
}

} // namespace accel::config
