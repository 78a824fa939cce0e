#include "core/tokenizer/bpemodel.h"

#include "core/common/log.h"
#include "core/common/utf8.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <queue>

namespace accel::tokenizer {

namespace {

constexpr size_t kCacheCapacity = 20000;
constexpr size_t kMaxCachedWordBytes = 128;

struct Symbol {
    int32_t id;
    int32_t previous;
    int32_t next;
    bool removed;
};

struct Candidate {
    int32_t rank;
    int32_t left;
    int32_t leftId;
    int32_t rightId;
    int32_t result;
    bool operator>(const Candidate &other) const { return rank != other.rank ? rank > other.rank : left > other.left; }
};

// Calls f(character) for each character of `word`, a stray byte being one character.
template <typename F>
void forEachCharacter(std::string_view word, F f)
{
    for (size_t pos = 0; pos < word.size();) {
        size_t length = utf8::validCharLength(word, pos);
        if (length == 0)
            length = 1;
        f(word.substr(pos, length));
        pos += length;
    }
}

} // namespace

Result<std::unique_ptr<BpeModel>> BpeModel::create(const BpeSpec &spec, const std::string &source)
{
    std::unique_ptr<BpeModel> model(new BpeModel);
    model->m_vocab.reserve(spec.vocab.size());
    for (const auto &[token, id] : spec.vocab) {
        model->m_vocab.emplace(token, id);
        if (static_cast<size_t>(id) >= model->m_idToToken.size()) {
            model->m_idToToken.resize(static_cast<size_t>(id) + 1);
            model->m_hasId.resize(static_cast<size_t>(id) + 1, false);
        }
        model->m_idToToken[static_cast<size_t>(id)] = token;
        model->m_hasId[static_cast<size_t>(id)] = true;
    }
    model->m_merges.reserve(spec.merges.size());
    for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
        const auto &[left, right] = spec.merges[rank];
        const int32_t leftId = model->tokenId(left);
        const int32_t rightId = model->tokenId(right);
        const int32_t result = model->tokenId(left + right);
        auto where = [rank]() { return "model.merges[" + std::to_string(rank) + "]: "; };
        if (leftId < 0 || rightId < 0)
            return makeError(ErrorCode::InvalidInput,
                             where() + "token \"" + (leftId < 0 ? left : right) + "\" is not in model.vocab", source);
        if (result < 0)
            return makeError(ErrorCode::InvalidInput,
                             where() + "merged token \"" + left + right + "\" is not in model.vocab", source);
        model->m_merges.try_emplace(pairKey(leftId, rightId), Merge{static_cast<int32_t>(rank), result});
    }
    if (spec.unkToken) {
        model->m_unkId = model->tokenId(*spec.unkToken);
        if (model->m_unkId < 0)
            return makeError(ErrorCode::InvalidInput,
                             "model.unk_token: \"" + *spec.unkToken + "\" is not in model.vocab", source);
    }
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        model->m_byteIds[static_cast<size_t>(b)] = model->tokenId(name);
    }
    model->m_fuseUnk = spec.fuseUnk;
    model->m_byteFallback = spec.byteFallback;
    for (const auto &entry : spec.vocab)
        model->m_longestEntry = std::max(model->m_longestEntry, entry.first.size());
    model->m_ignoreMerges = spec.ignoreMerges;
    return model;
}

int32_t BpeModel::tokenId(std::string_view token) const
{
    const auto it = m_vocab.find(std::string(token));
    return it == m_vocab.end() ? -1 : it->second;
}

const std::string *BpeModel::tokenText(int32_t id) const
{
    if (id < 0 || static_cast<size_t>(id) >= m_idToToken.size() || !m_hasId[static_cast<size_t>(id)])
        return nullptr;
    return &m_idToToken[static_cast<size_t>(id)];
}

bool BpeModel::hasByteTokens(std::string_view character) const
{
    if (!m_byteFallback)
        return false;
    for (const char c : character)
        if (m_byteIds[static_cast<unsigned char>(c)] < 0)
            return false;
    return true;
}

size_t BpeModel::minimumTokens(std::string_view word) const
{
    // A token merged from characters spells them (its entry is their concatenation), and a byte
    // token's entry ("<0x41>") is longer than its byte: the characters with a token cover at most
    // m_longestEntry bytes of the word per token.
    uint64_t known = 0;
    forEachCharacter(word, [&](std::string_view character) {
        if (tokenId(character) >= 0 || hasByteTokens(character))
            known += character.size();
    });
    return static_cast<size_t>((known + m_longestEntry - 1) / m_longestEntry);
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t> &out) const
{
    if (word.empty())
        return;
    if (m_ignoreMerges) {
        if (const int32_t id = tokenId(word); id >= 0) {
            out.push_back(id);
            return;
        }
    }
    const bool cacheable = word.size() <= kMaxCachedWordBytes;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(m_cacheMutex);
        const auto it = m_cache.find(std::string(word));
        if (it != m_cache.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<int32_t> ids;
    mergeWord(word, ids);
    out.insert(out.end(), ids.begin(), ids.end());
    if (cacheable) {
        std::lock_guard<std::mutex> lock(m_cacheMutex);
        if (m_cache.size() < kCacheCapacity)
            m_cache.emplace(std::string(word), std::move(ids));
    }
}

void BpeModel::mergeWord(std::string_view word, std::vector<int32_t> &out) const
{
    // Initial symbols: one per character, byte tokens for characters outside the vocabulary
    // (byte_fallback), else the unknown token (fused with a preceding one when fuse_unk is set).
    std::vector<Symbol> symbols;
    symbols.reserve(word.size());
    bool previousWasUnk = false;
    auto push = [&symbols](int32_t id) {
        const auto index = static_cast<int32_t>(symbols.size());
        symbols.push_back({id, index - 1, index + 1, false});
    };
    forEachCharacter(word, [&](std::string_view character) {
        if (const int32_t id = tokenId(character); id >= 0) {
            push(id);
            previousWasUnk = false;
            return;
        }
        if (hasByteTokens(character)) {
            for (const char c : character)
                push(m_byteIds[static_cast<unsigned char>(c)]);
            previousWasUnk = false;
            return;
        }
        if (m_unkId < 0) {
            log::debug("tokenizer",
                       "character \"" + std::string(character) + "\" has no token and no unk_token: dropped");
            return;
        }
        if (!(m_fuseUnk && previousWasUnk))
            push(m_unkId);
        previousWasUnk = true;
    });
    if (symbols.empty())
        return;
    symbols.back().next = -1;

    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
    auto consider = [&](int32_t left) {
        if (left < 0)
            return;
        const int32_t right = symbols[static_cast<size_t>(left)].next;
        if (right < 0)
            return;
        const int32_t leftId = symbols[static_cast<size_t>(left)].id;
        const int32_t rightId = symbols[static_cast<size_t>(right)].id;
        const auto it = m_merges.find(pairKey(leftId, rightId));
        if (it != m_merges.end())
            queue.push({it->second.rank, left, leftId, rightId, it->second.result});
    };
    for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i)
        consider(i);

    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Symbol &left = symbols[static_cast<size_t>(c.left)];
        if (left.removed || left.id != c.leftId || left.next < 0)
            continue;
        Symbol &right = symbols[static_cast<size_t>(left.next)];
        if (right.id != c.rightId)
            continue; // stale: one side has been merged since
        left.id = c.result;
        right.removed = true;
        left.next = right.next;
        if (right.next >= 0)
            symbols[static_cast<size_t>(right.next)].previous = c.left;
        consider(left.previous);
        consider(c.left);
    }
    for (const Symbol &symbol : symbols)
        if (!symbol.removed)
            out.push_back(symbol.id);
}

} // namespace accel::tokenizer
