#include "core/tokenizer/regexsplitter.h"

#include "core/common/log.h"
#include "core/tokenizer/unicodetables.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstdio>

namespace accel::tokenizer {

struct RegexSplitter::Compiled {
    pcre2_code *code = nullptr;
    ~Compiled() { pcre2_code_free(code); }
};

const char *RegexSplitter::gpt2Pattern()
{
    return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
}

namespace {

void appendCodePoint(std::string &out, char32_t c)
{
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "\\x{%X}", static_cast<unsigned>(c));
    out += buffer;
}

// The ranges as the inside of a character class, complemented (surrogates left out) when `negate`.
std::string classBody(const unicode::RangeList &list, bool negate)
{
    std::vector<unicode::CodePointRange> ranges(list.ranges, list.ranges + list.size);
    if (negate) {
        std::vector<unicode::CodePointRange> complement;
        char32_t next = 0;
        auto add = [&](char32_t first, char32_t last) {
            // Surrogates are not characters in UTF mode.
            if (first <= 0xD7FF && last >= 0xD800) {
                complement.push_back({first, 0xD7FF});
                first = 0xE000;
            }
            if (first < 0xE000 && first >= 0xD800)
                first = 0xE000;
            if (first <= last)
                complement.push_back({first, last});
        };
        for (const auto &range : ranges) {
            if (range.first > next)
                add(next, range.first - 1);
            next = range.last + 1;
        }
        if (next <= 0x10FFFF)
            add(next, 0x10FFFF);
        ranges = std::move(complement);
    }
    std::string out;
    for (const auto &range : ranges) {
        appendCodePoint(out, range.first);
        if (range.last != range.first) {
            out += '-';
            appendCodePoint(out, range.last);
        }
    }
    return out;
}

// The pattern with \p{..}/\P{..} of the general categories and \s/\S spelled out as explicit
// code point classes (unicodetables.h), so matching follows Hugging Face tokenizers' Unicode tables
// and not the installed PCRE2's. Other constructs are left to PCRE2.
std::string withExplicitUnicodeClasses(const std::string &pattern)
{
    std::string out;
    out.reserve(pattern.size() * 4);
    bool inClass = false;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '[' && !inClass) {
            inClass = true;
            out += c;
            // A ']' right after '[' or '[^' is literal.
            if (i + 1 < pattern.size() && pattern[i + 1] == '^')
                out += pattern[++i];
            if (i + 1 < pattern.size() && pattern[i + 1] == ']')
                out += pattern[++i];
            continue;
        }
        if (c == '[' && inClass && i + 1 < pattern.size() && pattern[i + 1] == ':') {
            const size_t end = pattern.find(":]", i + 2); // POSIX class [:alpha:]
            if (end != std::string::npos) {
                out.append(pattern, i, end + 2 - i);
                i = end + 1;
                continue;
            }
        }
        if (c == ']' && inClass) {
            inClass = false;
            out += c;
            continue;
        }
        if (c != '\\' || i + 1 >= pattern.size()) {
            out += c;
            continue;
        }
        const char kind = pattern[i + 1];
        std::string name;
        size_t consumed = 2;
        bool negate = false;
        if (kind == 's' || kind == 'S') {
            name = "space";
            negate = kind == 'S';
        } else if (kind == 'p' || kind == 'P') {
            negate = kind == 'P';
            if (i + 2 < pattern.size() && pattern[i + 2] == '{') {
                const size_t close = pattern.find('}', i + 3);
                if (close != std::string::npos) {
                    name = pattern.substr(i + 3, close - i - 3);
                    consumed = close + 1 - i;
                    if (!name.empty() && name[0] == '^') {
                        negate = !negate;
                        name.erase(0, 1);
                    }
                }
            } else if (i + 2 < pattern.size()) {
                name = pattern.substr(i + 2, 1);
                consumed = 3;
            }
        }
        const auto list = name.empty() ? std::nullopt : unicode::propertyRanges(name);
        if (!list) { // an escape PCRE2 handles itself (\\, \x{..}, \d, a script's \p{Han})
            out += c;
            out += kind;
            ++i;
            continue;
        }
        const std::string body = classBody(*list, inClass && negate);
        out += inClass ? body : (negate ? "[^" : "[") + body + "]";
        i += consumed - 1;
    }
    return out;
}

} // namespace

Result<RegexSplitter> RegexSplitter::create(const std::string &pattern)
{
    int errorCode = 0;
    PCRE2_SIZE errorOffset = 0;
    const std::string explicitPattern = withExplicitUnicodeClasses(pattern);
    pcre2_code *code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(explicitPattern.data()), explicitPattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &errorCode, &errorOffset, nullptr);
    if (!code) {
        PCRE2_UCHAR buffer[256];
        pcre2_get_error_message(errorCode, buffer, sizeof buffer);
        return makeError(ErrorCode::InvalidInput, "regular expression \"" + pattern +
                                                      "\" does not compile: " + reinterpret_cast<const char *>(buffer));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); // falls back to the interpreter when JIT is missing
    auto compiled = std::make_shared<Compiled>();
    compiled->code = code;
    RegexSplitter splitter;
    splitter.m_compiled = std::move(compiled);
    return splitter;
}

template <typename Found>
void RegexSplitter::forEachMatch(std::string_view text, Found found) const
{
    if (text.empty())
        return;
    pcre2_match_data *match = pcre2_match_data_create_from_pattern(m_compiled->code, nullptr);
    const auto *subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t position = 0;
    while (position < text.size()) {
        const int rc =
            pcre2_match(m_compiled->code, subject, text.size(), position, PCRE2_NO_UTF_CHECK, match, nullptr);
        if (rc < 0) {
            if (rc != PCRE2_ERROR_NOMATCH)
                log::warning("tokenizer", "regular expression stopped with PCRE2 error " + std::to_string(rc) +
                                              "; the rest of the text is left as it is");
            break;
        }
        const PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(match);
        const size_t start = ovector[0];
        const size_t end = ovector[1];
        if (end == start) { // an empty match: step over one character
            position = start + 1;
            while (position < text.size() && (static_cast<unsigned char>(text[position]) & 0xC0) == 0x80)
                ++position;
            continue;
        }
        found(start, end);
        position = end;
    }
    pcre2_match_data_free(match);
}

void RegexSplitter::split(std::string_view text, std::vector<std::string> &out, SplitBehavior behavior,
                          bool invert) const
{
    struct Piece {
        size_t start;
        size_t end;
        bool isMatch;
    };
    std::vector<Piece> pieces;
    size_t gapStart = 0;
    forEachMatch(text, [&](size_t start, size_t end) {
        if (start > gapStart)
            pieces.push_back({gapStart, start, invert});
        pieces.push_back({start, end, !invert});
        gapStart = end;
    });
    if (gapStart < text.size())
        pieces.push_back({gapStart, text.size(), invert});

    // Merge pieces by their ranges first, then cut the text once.
    std::vector<std::pair<size_t, size_t>> ranges;
    bool previousMatch = false;
    switch (behavior) {
    case SplitBehavior::Isolated:
        for (const Piece &p : pieces)
            ranges.emplace_back(p.start, p.end);
        break;
    case SplitBehavior::Removed:
        for (const Piece &p : pieces)
            if (!p.isMatch)
                ranges.emplace_back(p.start, p.end);
        break;
    case SplitBehavior::MergedWithPrevious:
        for (const Piece &p : pieces) {
            if (p.isMatch && !previousMatch && !ranges.empty())
                ranges.back().second = p.end;
            else
                ranges.emplace_back(p.start, p.end);
            previousMatch = p.isMatch;
        }
        break;
    case SplitBehavior::MergedWithNext:
        // A match joins the piece after it, unless that piece is a match too.
        for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
            if (it->isMatch && !previousMatch && !ranges.empty())
                ranges.back().first = it->start;
            else
                ranges.emplace_back(it->start, it->end);
            previousMatch = it->isMatch;
        }
        std::reverse(ranges.begin(), ranges.end());
        break;
    case SplitBehavior::Contiguous:
        for (size_t i = 0; i < pieces.size(); ++i) {
            if (i > 0 && pieces[i].isMatch && pieces[i - 1].isMatch)
                ranges.back().second = pieces[i].end;
            else
                ranges.emplace_back(pieces[i].start, pieces[i].end);
        }
        break;
    }
    for (const auto &[start, end] : ranges)
        if (end > start)
            out.emplace_back(text.substr(start, end - start));
}

std::string RegexSplitter::replace(std::string_view text, const std::string &content) const
{
    std::string out;
    out.reserve(text.size());
    size_t gapStart = 0;
    forEachMatch(text, [&](size_t start, size_t end) {
        out.append(text.substr(gapStart, start - gapStart));
        out += content;
        gapStart = end;
    });
    out.append(text.substr(gapStart));
    return out;
}

} // namespace accel::tokenizer
