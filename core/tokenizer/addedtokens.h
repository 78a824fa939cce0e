// Finds added tokens (special or not) in text before the model sees it: leftmost match first,
// the longest token among those starting there, with single_word, lstrip and rstrip honoured.
#pragma once

#include "core/tokenizer/tokenizerspec.h"

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace accel::tokenizer {

// A stretch of text: either plain text for the model, or one added token.
struct TextPiece {
    std::string text;
    int32_t tokenId = -1;    // >= 0 for an added token
    bool startsText = false; // the piece begins at the start of the original text
};

class AddedTokenMatcher {
public:
    AddedTokenMatcher() = default;
    // `contents` are the strings to look for, one per token (the content, or its normalized form).
    AddedTokenMatcher(const std::vector<AddedToken> &tokens, const std::vector<std::string> &contents);

    bool empty() const { return m_entries.empty(); }

    // Splits `piece` (a plain-text piece) and appends the results to `out`.
    void split(const TextPiece &piece, std::vector<TextPiece> &out) const;

private:
    struct Entry {
        std::string content;
        int32_t id;
        bool singleWord;
        bool lstrip;
        bool rstrip;
    };
    bool matchesAt(const Entry &entry, std::string_view text, size_t pos) const;

    std::vector<Entry> m_entries;
    std::array<std::vector<size_t>, 256> m_byFirstByte; // entry indexes, longest content first
};

} // namespace accel::tokenizer
