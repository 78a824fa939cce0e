#include "core/tokenizer/regexsplitter.h"

#include "core/common/log.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

namespace accel::tokenizer {

struct RegexSplitter::Compiled {
    pcre2_code *code = nullptr;
    ~Compiled() { pcre2_code_free(code); }
};

const char *RegexSplitter::gpt2Pattern()
{
    return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
}

Result<RegexSplitter> RegexSplitter::create(const std::string &pattern)
{
    int errorCode = 0;
    PCRE2_SIZE errorOffset = 0;
    pcre2_code *code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &errorCode, &errorOffset, nullptr);
    if (!code) {
        PCRE2_UCHAR buffer[256];
        pcre2_get_error_message(errorCode, buffer, sizeof buffer);
        return makeError(ErrorCode::InvalidInput, "regular expression \"" + pattern + "\" does not compile at offset " +
                                                      std::to_string(errorOffset) + ": " +
                                                      reinterpret_cast<const char *>(buffer));
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
