// ConfigValue -> YAML text, byte-for-byte what PyYAML's yaml.safe_dump() writes with its
// defaults: block style, keys sorted, indent 2, sequences in mappings not indented, line width
// 80, ASCII only (other characters escaped in double quotes), and the same choice between plain,
// 'single' and "double" quoted scalars.
#include "core/config/configvalue.h"

#include <cstdio>
#include <limits>

namespace accel::config {

namespace {

constexpr int BestWidth = 80;
constexpr int BestIndent = 2;

std::u32string decodeUtf8(const std::string &text)
{
    std::u32string out;
    size_t i = 0;
    while (i < text.size()) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        char32_t cp = 0xFFFD;
        size_t length = 1;
        if (c < 0x80) {
            cp = c;
        } else if ((c >> 5) == 0x6) {
            length = 2;
        } else if ((c >> 4) == 0xE) {
            length = 3;
        } else if ((c >> 3) == 0x1E) {
            length = 4;
        }
        if (length > 1) {
            if (i + length > text.size()) {
                length = 1;
            } else {
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
            }
        }
        out.push_back(cp);
        i += length;
    }
    return out;
}

bool isBreak(char32_t ch)
{
    return ch == U'\n' || ch == 0x85 || ch == 0x2028 || ch == 0x2029;
}
bool isSpaceOrBreak(char32_t ch)
{
    return ch == 0 || ch == U' ' || ch == U'\t' || ch == U'\r' || isBreak(ch);
}

struct Analysis {
    bool empty = false;
    bool multiline = false;
    bool allowBlockPlain = true;
    bool allowSingleQuoted = true;
};

Analysis analyze(const std::u32string &s)
{
    Analysis a;
    if (s.empty()) {
        a.empty = true;
        return a;
    }
    bool blockIndicators = false, lineBreaks = false, special = false;
    bool leadingSpace = false, leadingBreak = false, trailingSpace = false, trailingBreak = false;
    bool breakSpace = false, spaceBreak = false;
    if (s.compare(0, 3, U"---") == 0 || s.compare(0, 3, U"...") == 0)
        blockIndicators = true;
    bool precededByWhitespace = true;
    bool followedByWhitespace = s.size() == 1 || isSpaceOrBreak(s[1]);
    bool previousSpace = false, previousBreak = false;
    for (size_t index = 0; index < s.size(); ++index) {
        const char32_t ch = s[index];
        if (index == 0) {
            if (std::u32string(U"#,[]{}&*!|>'\"%@`").find(ch) != std::u32string::npos)
                blockIndicators = true;
            if ((ch == U'?' || ch == U':') && followedByWhitespace)
                blockIndicators = true;
            if (ch == U'-' && followedByWhitespace)
                blockIndicators = true;
        } else {
            if (ch == U':' && followedByWhitespace)
                blockIndicators = true;
            if (ch == U'#' && precededByWhitespace)
                blockIndicators = true;
        }
        if (isBreak(ch))
            lineBreaks = true;
        if (!(ch == U'\n' || (ch >= 0x20 && ch <= 0x7E)))
            special = true; // allow_unicode is off: everything else is escaped
        if (ch == U' ') {
            if (index == 0)
                leadingSpace = true;
            if (index == s.size() - 1)
                trailingSpace = true;
            if (previousBreak)
                breakSpace = true;
            previousSpace = true;
            previousBreak = false;
        } else if (isBreak(ch)) {
            if (index == 0)
                leadingBreak = true;
            if (index == s.size() - 1)
                trailingBreak = true;
            if (previousSpace)
                spaceBreak = true;
            previousSpace = false;
            previousBreak = true;
        } else {
            previousSpace = previousBreak = false;
        }
        precededByWhitespace = isSpaceOrBreak(ch);
        followedByWhitespace = index + 2 >= s.size() || isSpaceOrBreak(s[index + 2]);
    }
    a.multiline = lineBreaks;
    if (leadingSpace || leadingBreak || trailingSpace || trailingBreak)
        a.allowBlockPlain = false;
    if (breakSpace)
        a.allowBlockPlain = a.allowSingleQuoted = false;
    if (spaceBreak || special)
        a.allowBlockPlain = a.allowSingleQuoted = false;
    if (lineBreaks || blockIndicators)
        a.allowBlockPlain = false;
    return a;
}

void appendUtf8(std::string &out, char32_t cp)
{
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

class Writer {
public:
    std::string out;

    void document(const ConfigValue &root)
    {
        m_indent = -1;
        m_root = true;
        node(root, false, false, false);
        writeIndent(0);
        if (m_openEnded) {
            writeIndicator("...", true);
            writeIndent(0);
        }
    }

private:
    int m_column = 0;
    int m_indent = -1; // -1: no indentation level yet (PyYAML's None)
    bool m_whitespace = true;
    bool m_indention = true;
    bool m_openEnded = false;
    bool m_root = false; // the next node is the document's root

    void write(const std::string &data, int width)
    {
        out += data;
        m_column += width;
    }

    void writeIndicator(const std::string &indicator, bool needWhitespace, bool whitespace = false,
                        bool indention = false)
    {
        const std::string data = (m_whitespace || !needWhitespace) ? indicator : " " + indicator;
        write(data, static_cast<int>(data.size()));
        m_whitespace = whitespace;
        m_indention = m_indention && indention;
        m_openEnded = false;
    }

    void writeLineBreak()
    {
        m_whitespace = true;
        m_indention = true;
        m_column = 0;
        out += '\n';
    }

    void writeIndent(int indent)
    {
        if (!m_indention || m_column > indent || (m_column == indent && !m_whitespace))
            writeLineBreak();
        if (m_column < indent) {
            m_whitespace = true;
            out.append(static_cast<size_t>(indent - m_column), ' ');
            m_column = indent;
        }
    }

    int increaseIndent(bool flow, bool indentless)
    {
        const int previous = m_indent;
        if (m_indent < 0)
            m_indent = flow ? BestIndent : 0;
        else if (!indentless)
            m_indent += BestIndent;
        return previous;
    }

    void node(const ConfigValue &value, bool mappingContext, bool simpleKey, bool rootSequence)
    {
        const bool root = m_root;
        m_root = false;
        switch (value.type) {
        case ConfigValue::Type::List:
            if (value.items.empty()) {
                writeIndicator("[]", true); // flow sequence, opened and closed on the spot
                return;
            }
            blockSequence(value, mappingContext);
            return;
        case ConfigValue::Type::Map:
            if (value.members.empty()) {
                writeIndicator("{}", true);
                return;
            }
            blockMapping(value);
            return;
        default:
            scalarNode(value, simpleKey, root);
            return;
        }
        (void)rootSequence;
    }

    void blockSequence(const ConfigValue &value, bool mappingContext)
    {
        const bool indentless = mappingContext && !m_indention;
        const int saved = increaseIndent(false, indentless);
        for (const ConfigValue &item : value.items) {
            writeIndent(m_indent);
            writeIndicator("-", true, false, true);
            node(item, false, false, false);
        }
        m_indent = saved;
    }

    void blockMapping(const ConfigValue &value)
    {
        const int saved = increaseIndent(false, false);
        for (const auto &[key, member] : value.members) {
            writeIndent(m_indent);
            const std::u32string decoded = decodeUtf8(key);
            const Analysis a = analyze(decoded);
            if (decoded.size() < 128 && !a.empty && !a.multiline) {
                scalarNode(ConfigValue::fromString(key), true, false);
                writeIndicator(":", false);
            } else {
                // PyYAML's explicit key form for empty, long or multi-line keys.
                writeIndicator("?", true, false, true);
                scalarNode(ConfigValue::fromString(key), false, false);
                writeIndent(m_indent);
                writeIndicator(":", true, false, true);
            }
            node(member, true, false, false);
        }
        m_indent = saved;
    }

    void scalarNode(const ConfigValue &value, bool simpleKey, bool root)
    {
        const int saved = increaseIndent(true, false);
        // Plain scalars at the root leave the document open ("..." follows).
        const size_t before = out.size();
        switch (value.type) {
        case ConfigValue::Type::Null:
            writePlain(U"null");
            break;
        case ConfigValue::Type::Bool:
            writePlain(value.boolean ? U"true" : U"false");
            break;
        case ConfigValue::Type::Int: {
            const std::string s = std::to_string(value.integer);
            writePlain(std::u32string(s.begin(), s.end()));
            break;
        }
        case ConfigValue::Type::Float: {
            std::string s = floatText(value.real);
            writePlain(std::u32string(s.begin(), s.end()));
            break;
        }
        default: {
            const std::u32string text = decodeUtf8(value.text);
            const Analysis a = analyze(text);
            const bool implicit = plainScalarIsString(value.text);
            if (implicit && !(simpleKey && (a.empty || a.multiline)) && a.allowBlockPlain)
                writePlain(text, !simpleKey);
            else if (a.allowSingleQuoted && !(simpleKey && a.multiline))
                writeSingleQuoted(text, !simpleKey);
            else
                writeDoubleQuoted(text, !simpleKey);
            break;
        }
        }
        if (root && out.size() > before && out.back() != '\'' && out.back() != '"')
            m_openEnded = true;
        m_indent = saved;
    }

    static std::string floatText(double v)
    {
        if (v != v)
            return ".nan";
        if (v == std::numeric_limits<double>::infinity())
            return ".inf";
        if (v == -std::numeric_limits<double>::infinity())
            return "-.inf";
        std::string s = pythonFloatRepr(v);
        if (s.find('.') == std::string::npos && s.find('e') != std::string::npos)
            s.replace(s.find('e'), 1, ".0e");
        return s;
    }

    void writeText(const std::u32string &text, size_t start, size_t end)
    {
        std::string data;
        for (size_t i = start; i < end; ++i)
            appendUtf8(data, text[i]);
        write(data, static_cast<int>(end - start));
    }

    void writePlain(const std::u32string &text, bool split = true)
    {
        if (text.empty())
            return;
        if (!m_whitespace)
            write(" ", 1);
        m_whitespace = false;
        m_indention = false;
        bool spaces = false;
        size_t start = 0;
        for (size_t end = 0; end <= text.size(); ++end) {
            const char32_t ch = end < text.size() ? text[end] : 0;
            const bool atEnd = end == text.size();
            if (spaces) {
                if (atEnd || ch != U' ') {
                    if (start + 1 == end && m_column > BestWidth && split) {
                        writeIndent(m_indent);
                        m_whitespace = false;
                        m_indention = false;
                    } else {
                        writeText(text, start, end);
                    }
                    start = end;
                }
            } else if (atEnd || ch == U' ' || isBreak(ch)) {
                writeText(text, start, end);
                start = end;
            }
            if (!atEnd)
                spaces = ch == U' ';
        }
    }

    void writeSingleQuoted(const std::u32string &text, bool split)
    {
        writeIndicator("'", true);
        bool spaces = false, breaks = false;
        size_t start = 0;
        for (size_t end = 0; end <= text.size(); ++end) {
            const bool atEnd = end == text.size();
            const char32_t ch = atEnd ? 0 : text[end];
            if (spaces) {
                if (atEnd || ch != U' ') {
                    if (start + 1 == end && m_column > BestWidth && split && start != 0 && end != text.size()) {
                        writeIndent(m_indent);
                    } else {
                        writeText(text, start, end);
                    }
                    start = end;
                }
            } else if (breaks) {
                if (atEnd || !isBreak(ch)) {
                    if (text[start] == U'\n')
                        writeLineBreak();
                    for (size_t i = start; i < end; ++i)
                        writeLineBreak();
                    writeIndent(m_indent);
                    start = end;
                }
            } else if (atEnd || ch == U' ' || isBreak(ch) || ch == U'\'') {
                if (start < end) {
                    writeText(text, start, end);
                    start = end;
                }
            }
            if (ch == U'\'') {
                write("''", 2);
                start = end + 1;
            }
            if (!atEnd) {
                spaces = ch == U' ';
                breaks = isBreak(ch);
            }
        }
        writeIndicator("'", false);
    }

    static std::string escape(char32_t ch)
    {
        switch (ch) {
        case 0:
            return "\\0";
        case 0x07:
            return "\\a";
        case 0x08:
            return "\\b";
        case 0x09:
            return "\\t";
        case 0x0A:
            return "\\n";
        case 0x0B:
            return "\\v";
        case 0x0C:
            return "\\f";
        case 0x0D:
            return "\\r";
        case 0x1B:
            return "\\e";
        case U'"':
            return "\\\"";
        case U'\\':
            return "\\\\";
        case 0x85:
            return "\\N";
        case 0xA0:
            return "\\_";
        case 0x2028:
            return "\\L";
        case 0x2029:
            return "\\P";
        default:
            break;
        }
        char buffer[16];
        if (ch <= 0xFF)
            std::snprintf(buffer, sizeof buffer, "\\x%02X", static_cast<unsigned>(ch));
        else if (ch <= 0xFFFF)
            std::snprintf(buffer, sizeof buffer, "\\u%04X", static_cast<unsigned>(ch));
        else
            std::snprintf(buffer, sizeof buffer, "\\U%08X", static_cast<unsigned>(ch));
        return buffer;
    }

    void writeDoubleQuoted(const std::u32string &text, bool split)
    {
        writeIndicator("\"", true);
        size_t start = 0;
        for (size_t end = 0; end <= text.size(); ++end) {
            const bool atEnd = end == text.size();
            const char32_t ch = atEnd ? 0 : text[end];
            if (atEnd || ch == U'"' || ch == U'\\' || ch == 0x85 || ch == 0x2028 || ch == 0x2029 || ch == 0xFEFF ||
                !(ch >= 0x20 && ch <= 0x7E)) {
                if (start < end) {
                    writeText(text, start, end);
                    start = end;
                }
                if (!atEnd) {
                    const std::string data = escape(ch);
                    write(data, static_cast<int>(data.size()));
                    start = end + 1;
                }
            }
            if (end > 0 && end + 1 < text.size() && (ch == U' ' || start >= end) &&
                m_column + static_cast<int>(end - start) > BestWidth && split) {
                std::string data;
                for (size_t i = start; i < end; ++i)
                    appendUtf8(data, text[i]);
                const int width = static_cast<int>(end - start) + 1;
                data += '\\';
                if (start < end)
                    start = end;
                write(data, width);
                writeIndent(m_indent);
                m_whitespace = false;
                m_indention = false;
                if (text[start] == U' ')
                    write("\\", 1);
            }
        }
        writeIndicator("\"", false);
    }
};

} // namespace

std::string emitYaml(const ConfigValue &document)
{
    Writer writer;
    writer.document(document);
    return writer.out;
}

} // namespace accel::config
