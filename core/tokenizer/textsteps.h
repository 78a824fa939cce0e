// The text stages around the BPE model: normalizers (before), pre-tokenizers (splitting into
// words) and decoders (token strings back to text), applied in the order tokenizer.json lists them.
#pragma once

#include "core/tokenizer/tokenizerspec.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace accel::tokenizer {

// The normalizers applied in order. A Replace whose pattern stops early (its step budget,
// regexsplitter.h) keeps the rest of the text as it is; then `problem` (when given) says why and
// the return value is the text so far.
std::string normalize(std::string text, const std::vector<NormalizerStep> &steps, std::string *problem = nullptr);

// How many times longer the normalizers can make a text at most, plus the bytes they can add
// whatever its length: Replace multiplies by its content's length over the shortest match
// (rounded up, at least 1), Prepend adds its text. Saturates at UINT64_MAX.
struct Growth {
    uint64_t factor = 1;
    uint64_t added = 0;
};
Growth normalizerGrowth(const std::vector<NormalizerStep> &steps);
// The same for the decoders' Replace steps (the others never lengthen the text by a factor).
Growth decoderGrowth(const std::vector<DecoderStep> &steps);

// Splits one plain-text piece into the words the model tokenizes, handing each to `word` as soon as
// the steps after it cannot change it (memory stays that of one piece, not of all its words); a
// callback returning false stops. `startsText` tells whether the piece begins at the start of the
// whole input (Metaspace's "first" prepend scheme). Returns false when a step's pattern stopped
// early (`problem` says why; the rest of that piece went on as one word).
bool forEachWord(const std::string &text, bool startsText, const std::vector<PreTokenizerStep> &steps,
                 const std::function<bool(std::string &&)> &word, std::string *problem = nullptr);

// All words of a piece (forEachWord).
std::vector<std::string> preTokenize(const std::string &text, bool startsText,
                                     const std::vector<PreTokenizerStep> &steps);

// Turns the token strings of a decoded sequence into text.
std::string decodeTokens(std::vector<std::string> tokens, const std::vector<DecoderStep> &steps);

void replaceAll(std::string &text, const std::string &from, const std::string &to);

} // namespace accel::tokenizer
