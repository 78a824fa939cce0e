// A Hugging Face tokenizer.json, for the inference playground: BPE models in the GPT-2 byte-level
// style and the Llama sentencepiece-converted style (byte fallback, "▁" for spaces), added and
// special tokens, the BOS template. Anything else is refused at load with an Error naming the
// feature. Copies share the loaded data; encode and decode are safe from several threads.
#pragma once

#include "core/common/result.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace accel::tokenizer {

class Tokenizer {
public:
    // An empty tokenizer (encodes to nothing, decodes to ""); use load() or fromJson().
    Tokenizer() = default;
    bool isEmpty() const { return !m_impl; }

    // `path` is a tokenizer.json or a folder that holds one. A tokenizer_config.json next to it,
    // when present, names the BOS and EOS tokens; a generation_config.json adds stop ids.
    static Result<Tokenizer> load(const std::string &path);
    // `source` names the text in error messages.
    static Result<Tokenizer> fromJson(const std::string &jsonText, const std::string &source = "tokenizer.json");

    // Invalid UTF-8 in `text` is read as U+FFFD. With addSpecialTokens the post-processor's
    // template is applied (Llama: BOS in front). A pattern that runs past its step budget
    // (regexsplitter.h: a hostile tokenizer.json) leaves the rest of its text unsplit, with a
    // warning in the log; text from outside goes through encodeChecked() instead.
    std::vector<int32_t> encode(const std::string &text, bool addSpecialTokens = true) const;
    // encode() that fails instead: InvalidInput naming the tokenizer file when a pattern runs past
    // its step budget, and "more than N tokens" as soon as the ids (template tokens included) pass
    // maxTokens, before the rest of the text is pre-tokenized: memory and time stay those of the
    // text read so far.
    Result<std::vector<int32_t>> encodeChecked(const std::string &text, bool addSpecialTokens = true,
                                               size_t maxTokens = SIZE_MAX) const;
    std::string decode(const std::vector<int32_t> &ids, bool skipSpecialTokens = false) const;

    // The vocabulary string of an id ("" for an unknown id) and back (-1 when absent).
    std::string tokenText(int32_t id) const;
    int32_t tokenId(const std::string &token) const;
    bool isSpecial(int32_t id) const;

    int32_t bosId() const; // -1 when the tokenizer has none
    int32_t eosId() const;
    // Every id that ends generation: eosId() and the "eos_token_id" list of a
    // generation_config.json next to the file (Llama 3 instruct also stops at <|eot_id|>).
    std::vector<int32_t> eosIds() const;
    // One more than the largest id of the vocabulary and the added tokens.
    size_t vocabSize() const;

private:
    struct Impl;
    std::shared_ptr<const Impl> m_impl;
};

} // namespace accel::tokenizer
