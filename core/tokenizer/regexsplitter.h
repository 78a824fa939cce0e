// A compiled PCRE2 pattern (UTF + Unicode properties, JIT when available) that splits text into
// the pieces a pre-tokenizer produces: every match and every gap between matches, in order
// (Hugging Face's "Isolated" split behaviour). Also replaces matches for Replace steps.
#pragma once

#include "core/common/result.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace accel::tokenizer {

// What happens to the matches when splitting (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

class RegexSplitter {
public:
    // The pattern of GPT-2's ByteLevel pre-tokenizer.
    static const char *gpt2Pattern();

    static Result<RegexSplitter> create(const std::string &pattern);

    // Appends the pieces of `text` (valid UTF-8) to `out`: matches and the gaps between them, with
    // the matches handled as `behavior` says; `invert` swaps the roles of matches and gaps.
    void split(std::string_view text, std::vector<std::string> &out, SplitBehavior behavior = SplitBehavior::Isolated,
               bool invert = false) const;

    // `text` with every match replaced by `content` (taken literally).
    std::string replace(std::string_view text, const std::string &content) const;

private:
    // Calls found(start, end) for each non-empty match, left to right.
    template <typename Found>
    void forEachMatch(std::string_view text, Found found) const;

    struct Compiled;
    std::shared_ptr<const Compiled> m_compiled;
};

} // namespace accel::tokenizer
