#include "core/tokenizer/addedtokens.h"

#include <algorithm>

namespace accel::tokenizer {

namespace {

bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Word characters for single_word: ASCII letters, digits, '_' and any non-ASCII byte (letters of
// other scripts).
bool isWordByte(char c)
{
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x80 || (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || c == '_';
}

} // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken> &tokens, const std::vector<std::string> &contents)
{
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (contents[i].empty())
            continue;
        m_entries.push_back({contents[i], tokens[i].id, tokens[i].singleWord, tokens[i].lstrip, tokens[i].rstrip});
    }
    for (size_t i = 0; i < m_entries.size(); ++i)
        m_byFirstByte[static_cast<unsigned char>(m_entries[i].content[0])].push_back(i);
    for (auto &list : m_byFirstByte)
        std::stable_sort(list.begin(), list.end(), [this](size_t a, size_t b) {
            return m_entries[a].content.size() > m_entries[b].content.size();
        });
}

bool AddedTokenMatcher::matchesAt(const Entry &entry, std::string_view text, size_t pos) const
{
    if (text.compare(pos, entry.content.size(), entry.content) != 0)
        return false;
    if (!entry.singleWord)
        return true;
    const size_t end = pos + entry.content.size();
    const bool wordBefore = pos > 0 && isWordByte(text[pos - 1]);
    const bool wordAfter = end < text.size() && isWordByte(text[end]);
    return !wordBefore && !wordAfter;
}

void AddedTokenMatcher::split(const TextPiece &piece, std::vector<TextPiece> &out) const
{
    if (piece.tokenId >= 0 || m_entries.empty()) {
        out.push_back(piece);
        return;
    }
    const std::string_view text = piece.text;
    size_t plainStart = 0; // start of the text not yet emitted
    size_t pos = 0;
    while (pos < text.size()) {
        const Entry *found = nullptr;
        for (const size_t index : m_byFirstByte[static_cast<unsigned char>(text[pos])]) {
            if (matchesAt(m_entries[index], text, pos)) {
                found = &m_entries[index];
                break;
            }
        }
        if (!found) {
            ++pos;
            continue;
        }
        size_t start = pos;
        size_t end = pos + found->content.size();
        if (found->lstrip)
            while (start > plainStart && isSpace(text[start - 1]))
                --start;
        if (found->rstrip)
            while (end < text.size() && isSpace(text[end]))
                ++end;
        if (start > plainStart)
            out.push_back(
                {std::string(text.substr(plainStart, start - plainStart)), -1, piece.startsText && plainStart == 0});
        out.push_back({found->content, found->id, piece.startsText && start == 0});
        plainStart = end;
        pos = end;
    }
    if (plainStart < text.size())
        out.push_back({std::string(text.substr(plainStart)), -1, piece.startsText && plainStart == 0});
}

} // namespace accel::tokenizer
