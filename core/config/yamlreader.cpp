// YAML text -> ConfigValue, through yaml-cpp (the one place that calls it and catches its
// exceptions), typing plain scalars the way PyYAML's safe loader does.
#include "core/config/configvalue.h"

// yaml-cpp 0.7's node headers trip GCC 12's dangling-pointer analysis (a false positive in their
// iterator code); silence it for them only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>
#pragma GCC diagnostic pop

#include "core/common/utf8.h"

#include <cctype>
#include <cstdio>
#include <exception>
#include <memory>
#include <sstream>
#include <vector>

namespace accel::config {

namespace {

constexpr int MaxDepth = 64;
// Values a config may hold after its aliases are expanded. A real config has a few hundred; an
// alias of an alias of a list (a "billion laughs" file) expands without bound, 430 bytes to
// gigabytes, so expansion stops here with an error.
constexpr size_t MaxNodes = 100000;
// Text those values may hold: one alias of a long string repeated (a 1 MiB file) held 100000
// copies of it, gigabytes.
constexpr size_t MaxTextBytes = 16 * 1024 * 1024;

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

// What PyYAML's reader refuses before parsing: text that is not UTF-8 (RFC 3629: no overlong forms,
// surrogates or code points past U+10FFFF), and control characters other than tab, line feed and
// carriage return. Returns "" or the problem, with its line and byte offset.
std::string unreadableCharacter(const std::string &text, int &line, size_t &offset)
{
    line = 1;
    for (size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        const size_t length = utf8::validCharLength(text, i);
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", c);
        offset = i;
        if (length == 0)
            return std::string("byte ") + hex;
        if (length == 1 && c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            return std::string("control character ") + hex;
        if (length == 1 && c == 0x7F)
            return std::string("control character ") + hex;
        if (c == '\n')
            ++line;
        i += length;
    }
    return {};
}

// yaml-cpp 0.7 ends a quoted scalar that is never closed at the end of the text when the text ends
// with a line break (ScanScalar leaves its loop at the end of input without the end-of-input check
// it makes within a line), so "a: 'x\nb: 1\n" loads a = "x b: 1". PyYAML refuses it ("found
// unexpected end of stream"). `pos` is the node's mark: its tag and anchor come first. Returns the
// offset of the opening quote that has no closing one, or npos.
size_t unclosedQuote(const std::string &source, size_t pos)
{
    while (pos < source.size() && (source[pos] == '!' || source[pos] == '&')) {
        while (pos < source.size() && !std::isspace(static_cast<unsigned char>(source[pos])))
            ++pos;
        while (pos < source.size() && std::isspace(static_cast<unsigned char>(source[pos])))
            ++pos;
    }
    if (pos >= source.size() || (source[pos] != '\'' && source[pos] != '"'))
        return std::string::npos;
    const char quote = source[pos];
    for (size_t i = pos + 1; i < source.size(); ++i) {
        if (quote == '"' && source[i] == '\\')
            ++i;
        else if (quote == '\'' && source[i] == '\'' && i + 1 < source.size() && source[i + 1] == '\'')
            ++i;
        else if (source[i] == quote)
            return std::string::npos;
    }
    return pos;
}

// Thrown by Outline at text that yaml-cpp would load wrongly or without end.
struct OutlineStop {
    int line;
    std::string message;
};

// One pass of yaml-cpp's event parser, building no nodes (so aliases are not expanded): how many
// documents the text holds, which key the byte at a given offset belongs to, and the two faults of
// yaml-cpp that the nodes it builds would hide.
//
// yaml-cpp 0.7's SingleDocParser::HandleNode turns a token that cannot start a node (a ',' outside
// [ ] or { }: ",x", "[a],", "{a: 1},") into an empty node without consuming it, and
// Parser::HandleNextDocument starts a document whenever tokens are left: every later call yields
// another empty document at the same token, so YAML::LoadAll appends documents until memory runs
// out (gigabytes in seconds). Each real document consumes at least one token, so a document that
// starts where the previous one started is that loop: Outline stops there. And each scalar of the
// text is checked once for a quote that is never closed.
class Outline : public YAML::EventHandler {
public:
    explicit Outline(const std::string &text, size_t offset = std::string::npos) : m_text(text), m_offset(offset) {}

    int documents() const { return m_documents; }
    int secondDocumentLine() const { return m_secondDocumentLine; }
    // "fsdp_config.fsdp_version": the innermost entry that starts at or before the offset; "" when
    // there is none.
    std::string keyAtOffset() const
    {
        std::string path;
        for (const KeyLink *link = m_found.get(); link; link = link->parent.get())
            path = link->key + (path.empty() ? "" : "." + path);
        return path;
    }
    int keyLine() const { return m_found ? m_found->line : 0; }

    void OnDocumentStart(const YAML::Mark &mark) override
    {
        if (m_documents > 0 && static_cast<size_t>(mark.pos) == m_lastDocumentStart) {
            const char token = m_text[m_lastDocumentStart];
            throw OutlineStop{mark.line + 1, token == ',' ? std::string("',' outside [ ] or { } cannot start a value")
                                                          : std::string("'") + token + "' cannot start a value"};
        }
        if (++m_documents == 2)
            m_secondDocumentLine = mark.line + 1;
        m_lastDocumentStart = mark.pos;
        m_frames.clear();
    }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark &mark, YAML::anchor_t) override { node(mark, nullptr); }
    void OnAlias(const YAML::Mark &mark, YAML::anchor_t) override { node(mark, nullptr); }
    void OnScalar(const YAML::Mark &mark, const std::string &, YAML::anchor_t, const std::string &value) override
    {
        node(mark, &value);
        const size_t quote = unclosedQuote(m_text, static_cast<size_t>(mark.pos));
        if (quote != std::string::npos) {
            const size_t lineStart = m_text.rfind('\n', quote);
            const size_t column = lineStart == std::string::npos ? quote + 1 : quote - lineStart;
            throw OutlineStop{mark.line + 1, std::string("the ") + m_text[quote] + " at column " +
                                                 std::to_string(column) + " opens a quoted value that is never closed"};
        }
    }
    void OnSequenceStart(const YAML::Mark &mark, const std::string &, YAML::anchor_t,
                         YAML::EmitterStyle::value) override
    {
        node(mark, nullptr);
        push(false);
    }
    void OnSequenceEnd() override { m_frames.pop_back(); }
    void OnMapStart(const YAML::Mark &mark, const std::string &, YAML::anchor_t, YAML::EmitterStyle::value) override
    {
        node(mark, nullptr);
        push(true);
    }
    void OnMapEnd() override { m_frames.pop_back(); }

private:
    // The keys from the root to one entry, shared by the entries below it.
    struct KeyLink {
        std::shared_ptr<const KeyLink> parent;
        std::string key;
        int line;
    };
    struct Frame {
        bool map;
        bool keyNext;
        std::shared_ptr<const KeyLink> base; // the entry that holds this collection
        std::shared_ptr<const KeyLink> link; // the entry being read
    };

    void push(bool map)
    {
        std::shared_ptr<const KeyLink> base = m_frames.empty() ? nullptr : m_frames.back().link;
        m_frames.push_back(Frame{map, true, base, base});
    }

    void node(const YAML::Mark &mark, const std::string *scalar)
    {
        if (m_offset == std::string::npos)
            return;
        if (!m_frames.empty() && m_frames.back().map) {
            Frame &frame = m_frames.back();
            if (frame.keyNext)
                frame.link = std::make_shared<const KeyLink>(
                    KeyLink{frame.base, scalar ? utf8::toValid(scalar->substr(0, 80)) : std::string(), mark.line + 1});
            frame.keyNext = !frame.keyNext;
        }
        if (static_cast<size_t>(mark.pos) <= m_offset)
            m_found = m_frames.empty() ? nullptr : m_frames.back().link;
    }

    const std::string &m_text;
    size_t m_offset;
    int m_documents = 0;
    size_t m_lastDocumentStart = 0;
    int m_secondDocumentLine = 0;
    std::vector<Frame> m_frames;
    std::shared_ptr<const KeyLink> m_found;
};

// Runs all of `text` through `outline`; throws what yaml-cpp or Outline throws.
void readOutline(const std::string &text, Outline &outline)
{
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(outline)) {
    }
}

struct Converter {
    const std::string &fileName;
    Diagnostics *warnings = nullptr;
    std::string error;
    int errorLine = 0;
    size_t nodes = 0;
    size_t textBytes = 0;

    bool fail(int line, std::string message)
    {
        if (error.empty()) {
            error = std::move(message);
            errorLine = line;
        }
        return false;
    }

    bool countText(const YAML::Node &scalar)
    {
        textBytes += scalar.Scalar().size();
        if (textBytes <= MaxTextBytes)
            return true;
        return fail(scalar.Mark().line + 1, "more than " + std::to_string(MaxTextBytes / (1024 * 1024)) +
                                                " MiB of text once YAML aliases (*name) are expanded; a config "
                                                "file has a few KB");
    }

    bool scalar(const YAML::Node &node, ConfigValue &out)
    {
        if (!countText(node))
            return false;
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
                if (!countText(key))
                    return false;
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

} // namespace

Result<ConfigValue> parseYamlText(const std::string &text, const std::string &fileName, Diagnostics *warnings)
{
    const auto at = [&fileName](int line) { return fileName + ": line " + std::to_string(line); };
    int badLine = 0;
    size_t badOffset = 0;
    if (const std::string problem = unreadableCharacter(text, badLine, badOffset); !problem.empty()) {
        // Name the key the character is in, as far as yaml-cpp can read the text around it.
        Outline outline(text, badOffset);
        try {
            readOutline(text, outline);
        } catch (...) {
            // Invalid further on: the key found so far is the one.
        }
        std::string where;
        if (const std::string key = outline.keyAtOffset(); !key.empty()) {
            where = " in " + key;
            if (outline.keyLine() != badLine)
                where += " (key at line " + std::to_string(outline.keyLine()) + ")";
        }
        const bool utf8 = problem.rfind("byte", 0) == 0;
        return makeError(ErrorCode::InvalidInput,
                         "invalid YAML: " + problem + where +
                             (utf8 ? " is not valid UTF-8 (config files are UTF-8 text)" : " is not allowed"),
                         at(badLine));
    }
    try {
        Outline outline(text);
        readOutline(text, outline);
        if (outline.documents() > 1)
            return makeError(ErrorCode::InvalidInput,
                             "invalid YAML: the file holds " + std::to_string(outline.documents()) +
                                 " YAML documents (the second from line " +
                                 std::to_string(outline.secondDocumentLine()) + "); an Accelerate config is one",
                             fileName);
        if (outline.documents() == 0)
            return ConfigValue::null();
        const YAML::Node document = YAML::Load(text);
        Converter converter{fileName, warnings, {}, 0, 0, 0};
        ConfigValue root;
        if (!converter.convert(document, root, 0))
            return makeError(ErrorCode::InvalidInput, converter.error,
                             converter.errorLine > 0 ? at(converter.errorLine) : fileName);
        root.line = 1;
        return root;
    } catch (const OutlineStop &stop) {
        return makeError(ErrorCode::InvalidInput, "invalid YAML: " + stop.message, at(stop.line));
    } catch (const YAML::Exception &e) {
        // e.what() repeats the position; e.msg is the bare reason.
        return makeError(ErrorCode::InvalidInput, "invalid YAML: " + e.msg,
                         e.mark.is_null() ? fileName : at(e.mark.line + 1));
    } catch (const std::exception &e) {
        return makeError(ErrorCode::InvalidInput, std::string("invalid YAML: ") + e.what(), fileName);
    }
}

} // namespace accel::config
