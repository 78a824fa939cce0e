#include "core/common/yamldocument.h"

#include "core/common/fileutil.h"
#include "core/common/utf8.h"

#include <yaml-cpp/eventhandler.h>

#include <cctype>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <new>
#include <sstream>
#include <vector>

namespace accel::yamlutil {

namespace {

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

// Walks the loaded document as its readers will, aliases expanded, and stops at the first limit
// passed: the walk costs at most limits.maxValues steps, whatever the aliases multiply.
class Budget {
public:
    explicit Budget(const InputLimits &limits) : m_limits(limits) {}

    bool walk(const YAML::Node &node, int depth)
    {
        if (++m_values > m_limits.maxValues)
            return fail(node, "more than " + std::to_string(m_limits.maxValues) +
                                  " values once YAML aliases (*name) are expanded");
        switch (node.Type()) {
        case YAML::NodeType::Scalar:
            m_textBytes += node.Scalar().size();
            if (m_textBytes > m_limits.maxTextBytes)
                return fail(node, "more than " + sizeText(m_limits.maxTextBytes) +
                                      " of text once YAML aliases (*name) are expanded");
            return true;
        case YAML::NodeType::Sequence:
            if (depth >= m_limits.maxDepth)
                return deep(node);
            for (const YAML::Node &item : node)
                if (!walk(item, depth + 1))
                    return false;
            return true;
        case YAML::NodeType::Map: {
            if (depth >= m_limits.maxDepth)
                return deep(node);
            std::map<std::string, int> seen; // scalar keys and their lines, when repeats are refused
            for (auto it = node.begin(); it != node.end(); ++it) {
                // Copies: `it->first` lives in a proxy that dies at the end of the statement.
                const YAML::Node key = it->first;
                const YAML::Node value = it->second;
                if (!walk(key, depth + 1) || !walk(value, depth + 1))
                    return false;
                if (!m_limits.rejectDuplicateKeys || !key.IsScalar())
                    continue;
                const int line = key.Mark().is_null() ? 0 : key.Mark().line + 1;
                const auto [previous, added] = seen.emplace(key.Scalar(), line);
                if (!added) {
                    m_line = line;
                    m_error = "the key " + utf8::toValid(key.Scalar().substr(0, 80)) +
                              " is given twice (first at line " + std::to_string(previous->second) + ")";
                    return false;
                }
            }
            return true;
        }
        default:
            return true;
        }
    }

    int line() const { return m_line; }
    const std::string &error() const { return m_error; }

private:
    static std::string sizeText(size_t bytes)
    {
        return bytes % (1024 * 1024) == 0 ? std::to_string(bytes / (1024 * 1024)) + " MiB"
                                          : std::to_string(bytes) + " bytes";
    }
    bool deep(const YAML::Node &node)
    {
        return fail(node, "nested deeper than " + std::to_string(m_limits.maxDepth) + " levels");
    }
    bool fail(const YAML::Node &node, const std::string &message)
    {
        m_line = node.Mark().is_null() ? 0 : node.Mark().line + 1;
        m_error = message + " (the limit" + (m_limits.subject.empty() ? "" : " for " + m_limits.subject) + ")";
        return false;
    }

    const InputLimits &m_limits;
    size_t m_values = 0;
    size_t m_textBytes = 0;
    int m_line = 0;
    std::string m_error;
};

} // namespace

Result<YAML::Node> parseYaml(const std::string &text, const std::string &source, const InputLimits &limits)
{
    const auto at = [&source](int line) { return source + ": line " + std::to_string(line); };
    if (text.size() > limits.maxBytes)
        return makeError(ErrorCode::InvalidInput,
                         "too large: " + std::to_string(text.size()) + " bytes (the limit" +
                             (limits.subject.empty() ? "" : " for " + limits.subject) + " is " +
                             std::to_string(limits.maxBytes) + " bytes)",
                         source);
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
                             (utf8 ? " is not valid UTF-8 (YAML is UTF-8 text)" : " is not allowed"),
                         at(badLine));
    }
    try {
        Outline outline(text);
        readOutline(text, outline);
        if (outline.documents() > 1)
            return makeError(ErrorCode::InvalidInput,
                             "invalid YAML: the file holds " + std::to_string(outline.documents()) +
                                 " YAML documents (the second from line " +
                                 std::to_string(outline.secondDocumentLine()) + "); " +
                                 (limits.subject.empty() ? std::string("expected one") : limits.subject + " is one"),
                             source);
        if (outline.documents() == 0)
            return YAML::Node(YAML::NodeType::Null);
        YAML::Node document = YAML::Load(text);
        Budget budget(limits);
        if (!budget.walk(document, 0))
            return makeError(ErrorCode::InvalidInput, budget.error(), budget.line() > 0 ? at(budget.line()) : source);
        return document;
    } catch (const OutlineStop &stop) {
        return makeError(ErrorCode::InvalidInput, "invalid YAML: " + stop.message, at(stop.line));
    } catch (const YAML::Exception &e) {
        // e.what() repeats the position; e.msg is the bare reason.
        return makeError(ErrorCode::InvalidInput, "invalid YAML: " + e.msg,
                         e.mark.is_null() ? source : at(e.mark.line + 1));
    } catch (const std::bad_alloc &) {
        return makeError(ErrorCode::InvalidInput, "not enough memory to hold the YAML document", source);
    } catch (const std::exception &e) {
        return makeError(ErrorCode::InvalidInput, std::string("invalid YAML: ") + e.what(), source);
    }
}

Result<YAML::Node> readYamlFile(const std::string &path, const InputLimits &limits)
{
    auto text = fileutil::readFile(path, limits.maxBytes);
    if (!text)
        return tl::unexpected(text.error());
    return parseYaml(*text, path, limits);
}

} // namespace accel::yamlutil
