// A compiled PCRE2 pattern (UTF + Unicode properties, JIT when available) that splits text into
// the pieces a pre-tokenizer produces: every match and every gap between matches, in order
// (Hugging Face's "Isolated" split behaviour). Also replaces matches for Replace steps.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace accel::tokenizer {

// What happens to the matches when splitting (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// PCRE2 backtracks: a pattern such as .{0,300}.{0,300}.{0,300}Q|. costs millions of steps per
// match (64 s on a 2 KB prompt). The steps of all matches over one text are bounded by its size:
// kRegexStepsPerByte per byte plus kRegexBaseSteps (each match runs with a step limit that grows
// fourfold from 8 while it is hit, and every limit tried counts against the budget). The patterns of
// published tokenizers take fewer than 8 steps per byte, a whitespace run of any length included.
inline constexpr uint64_t kRegexStepsPerByte = 32;
inline constexpr uint64_t kRegexBaseSteps = 100000;

class RegexSplitter {
public:
    // The pattern of GPT-2's ByteLevel pre-tokenizer.
    static const char *gpt2Pattern();

    static Result<RegexSplitter> create(const std::string &pattern);

    // Calls piece(text) for each piece of `text` (valid UTF-8) in order: matches and the gaps
    // between them, the matches handled as `behavior` says, `invert` swapping the roles of matches
    // and gaps; a piece callback that returns false stops the split. Returns false when the
    // pattern stopped early (the step budget above, or another PCRE2 error) and says why in
    // `problem`: the rest of the text then forms one last gap.
    bool forEachPiece(std::string_view text, SplitBehavior behavior, bool invert,
                      const std::function<bool(std::string_view)> &piece, std::string *problem = nullptr) const;

    // Appends the pieces of `text` to `out` (forEachPiece).
    bool split(std::string_view text, std::vector<std::string> &out, SplitBehavior behavior = SplitBehavior::Isolated,
               bool invert = false, std::string *problem = nullptr) const;

    // `text` with every match replaced by `content` (taken literally); when the pattern stops
    // early, the rest is kept as it is and the return is false.
    bool replace(std::string_view text, const std::string &content, std::string &out,
                 std::string *problem = nullptr) const;
    std::string replace(std::string_view text, const std::string &content) const;

    // Bytes a match spans at least (PCRE2's minimum length in characters, 1 for a pattern that can
    // match empty: empty matches are stepped over).
    size_t minimumMatchBytes() const;
    const std::string &pattern() const;

private:
    // Calls found(start, end) for each non-empty match, left to right, until it returns false.
    template <typename Found>
    bool forEachMatch(std::string_view text, Found found, std::string *problem) const;

    struct Compiled;
    std::shared_ptr<const Compiled> m_compiled;
};

} // namespace accel::tokenizer
