// The BPE model of a tokenizer.json: vocabulary, ranked merges, unknown-token and byte-fallback
// handling. Words are merged with a priority queue over a linked list of symbols (lowest rank
// first, leftmost among equals) and short words are cached, so long prompts stay fast.
#pragma once

#include "core/common/result.h"
#include "core/tokenizer/tokenizerspec.h"

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace accel::tokenizer {

class BpeModel {
public:
    // `source` names the file in error messages (a merge whose parts are not in the vocabulary).
    static Result<std::unique_ptr<BpeModel>> create(const BpeSpec &spec, const std::string &source);

    // Appends the ids of one pre-tokenized word (valid UTF-8) to `out`.
    void tokenize(std::string_view word, std::vector<int32_t> &out) const;

    // A lower bound of the tokens `word` becomes, in one pass without merging: its characters that
    // have a token (or byte tokens) over the most bytes one token can stand for (the longest
    // vocabulary entry). Characters that become the unknown token or are dropped count nothing.
    size_t minimumTokens(std::string_view word) const;

    int32_t tokenId(std::string_view token) const;  // -1 when not in the vocabulary
    const std::string *tokenText(int32_t id) const; // nullptr when the id is not in the vocabulary
    size_t size() const { return m_vocab.size(); }
    int32_t maxId() const { return static_cast<int32_t>(m_idToToken.size()) - 1; }

private:
    BpeModel() = default;
    void mergeWord(std::string_view word, std::vector<int32_t> &out) const;
    // byte_fallback is on and every byte of `character` has its <0xNN> token.
    bool hasByteTokens(std::string_view character) const;

    struct Merge {
        int32_t rank;
        int32_t result;
    };
    static uint64_t pairKey(int32_t left, int32_t right)
    {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }

    std::unordered_map<std::string, int32_t> m_vocab;
    std::vector<std::string> m_idToToken;
    std::vector<bool> m_hasId;
    std::unordered_map<uint64_t, Merge> m_merges;
    std::array<int32_t, 256> m_byteIds{}; // <0xNN> tokens, -1 when missing
    int32_t m_unkId = -1;
    bool m_fuseUnk = false;
    bool m_byteFallback = false;
    bool m_ignoreMerges = false;
    size_t m_longestEntry = 1; // bytes of the longest vocabulary entry (minimumTokens())

    mutable std::mutex m_cacheMutex;
    mutable std::unordered_map<std::string, std::vector<int32_t>> m_cache;
};

} // namespace accel::tokenizer
