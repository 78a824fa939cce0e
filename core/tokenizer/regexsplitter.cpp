#include "core/tokenizer/regexsplitter.h"

#include "core/common/log.h"
#include "core/tokenizer/unicodetables.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstdio>
#include <optional>

namespace accel::tokenizer {

struct RegexSplitter::Compiled {
    pcre2_code *code = nullptr;
    std::string pattern; // as the tokenizer wrote it, for messages
    size_t minimumMatchBytes = 1;
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
    compiled->pattern = pattern;
    uint32_t minimum = 0; // in characters, each at least one byte
    if (pcre2_pattern_info(code, PCRE2_INFO_MINLENGTH, &minimum) == 0 && minimum > 0)
        compiled->minimumMatchBytes = minimum;
    RegexSplitter splitter;
    splitter.m_compiled = std::move(compiled);
    return splitter;
}

const std::string &RegexSplitter::pattern() const
{
    return m_compiled->pattern;
}

size_t RegexSplitter::minimumMatchBytes() const
{
    return m_compiled->minimumMatchBytes;
}

template <typename Found>
bool RegexSplitter::forEachMatch(std::string_view text, Found found, std::string *problem) const
{
    if (text.empty())
        return true;
    pcre2_match_data *match = pcre2_match_data_create_from_pattern(m_compiled->code, nullptr);
    pcre2_match_context *context = pcre2_match_context_create(nullptr);
    const auto *subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    const uint64_t budget = kRegexStepsPerByte * text.size() + kRegexBaseSteps;
    uint64_t charged = 0;
    size_t position = 0;
    bool complete = true;
    while (position < text.size()) {
        // PCRE2 does not say how many steps a match took: try with a small limit and, while it is
        // hit, again with four times as many, counting every limit tried (at most 5.4 times the
        // steps the match needed).
        int rc = PCRE2_ERROR_MATCHLIMIT;
        for (uint64_t limit = 8; rc == PCRE2_ERROR_MATCHLIMIT && charged < budget; limit *= 4) {
            const uint64_t allowed = std::min({limit, budget - charged, uint64_t(UINT32_MAX)});
            pcre2_set_match_limit(context, static_cast<uint32_t>(allowed));
            rc = pcre2_match(m_compiled->code, subject, text.size(), position, PCRE2_NO_UTF_CHECK, match, context);
            charged += allowed;
        }
        if (rc < 0) {
            if (rc != PCRE2_ERROR_NOMATCH) {
                complete = false;
                if (problem) {
                    PCRE2_UCHAR buffer[256];
                    pcre2_get_error_message(rc, buffer, sizeof buffer);
                    const std::string shown = m_compiled->pattern.size() > 80
                                                  ? m_compiled->pattern.substr(0, 77) + "..."
                                                  : m_compiled->pattern;
                    *problem =
                        rc == PCRE2_ERROR_MATCHLIMIT
                            ? "regular expression \"" + shown + "\" needs more than " + std::to_string(budget) +
                                  " steps on a text of " + std::to_string(text.size()) + " bytes (the limit is " +
                                  std::to_string(kRegexStepsPerByte) + " per byte plus " +
                                  std::to_string(kRegexBaseSteps) + ")"
                            : "regular expression \"" + shown + "\" stopped: " + reinterpret_cast<const char *>(buffer);
                }
            }
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
        if (!found(start, end))
            break;
        position = end;
    }
    pcre2_match_context_free(context);
    pcre2_match_data_free(match);
    return complete;
}

bool RegexSplitter::forEachPiece(std::string_view text, SplitBehavior behavior, bool invert,
                                 const std::function<bool(std::string_view)> &piece, std::string *problem) const
{
    // Pieces go out as soon as what follows cannot change them: a merging behaviour holds back at
    // most one piece.
    struct Range {
        size_t start = 0;
        size_t end = 0;
        bool isMatch = false;
    };
    std::optional<Range> held;
    bool previousMatch = false; // MergedWithPrevious, Contiguous: the last piece seen was a match
    bool stopped = false;
    const auto emit = [&](size_t start, size_t end) {
        if (end > start && !stopped && !piece(text.substr(start, end - start)))
            stopped = true;
    };
    const auto flush = [&] {
        if (held)
            emit(held->start, held->end);
        held.reset();
    };
    const auto add = [&](Range p) {
        switch (behavior) {
        case SplitBehavior::Isolated:
            emit(p.start, p.end);
            break;
        case SplitBehavior::Removed:
            if (!p.isMatch)
                emit(p.start, p.end);
            break;
        case SplitBehavior::MergedWithPrevious: // a match joins the piece before it, unless that is a match
        case SplitBehavior::Contiguous: {       // consecutive matches join
            const bool join = behavior == SplitBehavior::MergedWithPrevious ? !previousMatch : previousMatch;
            if (held && p.isMatch && join) {
                held->end = p.end;
            } else {
                flush();
                held = p;
            }
            previousMatch = p.isMatch;
            break;
        }
        case SplitBehavior::MergedWithNext:
            // A match joins the piece after it, unless that piece is a match too.
            if (held && held->isMatch && !p.isMatch) {
                emit(held->start, p.end);
                held.reset();
            } else {
                flush();
                if (p.isMatch)
                    held = p;
                else
                    emit(p.start, p.end);
            }
            break;
        }
        return !stopped;
    };
    size_t gapStart = 0;
    const bool complete = forEachMatch(
        text,
        [&](size_t start, size_t end) {
            if (start > gapStart && !add({gapStart, start, invert}))
                return false;
            gapStart = end;
            return add({start, end, !invert});
        },
        problem);
    if (!stopped && gapStart < text.size())
        add({gapStart, text.size(), invert});
    if (!stopped)
        flush();
    return complete;
}

bool RegexSplitter::split(std::string_view text, std::vector<std::string> &out, SplitBehavior behavior, bool invert,
                          std::string *problem) const
{
    return forEachPiece(
        text, behavior, invert,
        [&out](std::string_view piece) {
            out.emplace_back(piece);
            return true;
        },
        problem);
}

bool RegexSplitter::replace(std::string_view text, const std::string &content, std::string &out,
                            std::string *problem) const
{
    out.clear();
    out.reserve(text.size());
    size_t gapStart = 0;
    const bool complete = forEachMatch(
        text,
        [&](size_t start, size_t end) {
            out.append(text.substr(gapStart, start - gapStart));
            out += content;
            gapStart = end;
            return true;
        },
        problem);
    out.append(text.substr(gapStart));
    return complete;
}

std::string RegexSplitter::replace(std::string_view text, const std::string &content) const
{
    std::string out;
    std::string problem;
    if (!replace(text, content, out, &problem))
        log::warning("tokenizer", problem + "; the rest of the text is left as it is");
    return out;
}

} // namespace accel::tokenizer
