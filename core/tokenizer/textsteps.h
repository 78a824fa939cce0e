// The text stages around the BPE model: normalizers (before), pre-tokenizers (splitting into
// words) and decoders (token strings back to text), applied in the order tokenizer.json lists them.
#pragma once

#include "core/tokenizer/tokenizerspec.h"

#include <string>
#include <vector>

namespace accel::tokenizer {

std::string normalize(std::string text, const std::vector<NormalizerStep> &steps);

// Splits one plain-text piece into the words the model tokenizes. `startsText` tells whether the
// piece begins at the start of the whole input (Metaspace's "first" prepend scheme).
std::vector<std::string> preTokenize(const std::string &text, bool startsText,
                                     const std::vector<PreTokenizerStep> &steps);

// Turns the token strings of a decoded sequence into text.
std::string decodeTokens(std::vector<std::string> tokens, const std::vector<DecoderStep> &steps);

void replaceAll(std::string &text, const std::string &from, const std::string &to);

} // namespace accel::tokenizer
