// The parts of a tokenizer.json that Accel Studio understands, as plain data. specreader.cpp is
// the only place that reads the JSON; everything else works on these structs.
#pragma once

#include "core/common/result.h"
#include "core/tokenizer/regexsplitter.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace accel::tokenizer {

struct AddedToken {
    int32_t id = -1;
    std::string content;
    bool singleWord = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = false;
    bool special = false;
};

struct NormalizerStep {
    enum class Kind { Prepend, Replace };
    Kind kind = Kind::Prepend;
    std::string text;                   // Prepend: what to put in front; Replace: what to look for
    std::string replacement;            // Replace: what to put instead
    std::optional<RegexSplitter> regex; // Replace with a Regex pattern (instead of `text`)
};

enum class PrependScheme { Always, First, Never };

struct PreTokenizerStep {
    enum class Kind { ByteLevel, Metaspace, Split };
    Kind kind = Kind::ByteLevel;
    bool addPrefixSpace = false;              // ByteLevel
    std::optional<RegexSplitter> regex;       // ByteLevel with use_regex, Split
    std::string replacement = "\xE2\x96\x81"; // Metaspace ("▁")
    PrependScheme prependScheme = PrependScheme::Always;
    bool splitOnReplacement = true;                   // Metaspace "split"
    SplitBehavior behavior = SplitBehavior::Isolated; // Split and the pre-tokenizers built on it
    bool invert = false;
};

struct DecoderStep {
    enum class Kind { ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip };
    Kind kind = Kind::ByteLevel;
    std::string text;                   // Replace: pattern; Strip: content; Metaspace: replacement
    std::string replacement;            // Replace: content
    std::optional<RegexSplitter> regex; // Replace with a Regex pattern (instead of `text`)
    size_t stripStart = 0;
    size_t stripStop = 0;
    PrependScheme prependScheme = PrependScheme::Always; // Metaspace
};

// One entry of a TemplateProcessing "single" template: special token ids, or the sequence.
struct TemplatePiece {
    bool isSequence = false;
    std::vector<int32_t> ids;
};

struct BpeSpec {
    std::vector<std::pair<std::string, int32_t>> vocab;
    std::vector<std::pair<std::string, std::string>> merges;
    std::optional<std::string> unkToken;
    bool fuseUnk = false;
    bool byteFallback = false;
    bool ignoreMerges = false;
};

struct TokenizerSpec {
    std::vector<AddedToken> addedTokens;
    std::vector<NormalizerStep> normalizers;
    std::vector<PreTokenizerStep> preTokenizers;
    std::vector<DecoderStep> decoders;
    std::vector<TemplatePiece> singleTemplate; // empty: no special tokens are added
    BpeSpec model;
};

// Published tokenizers chain a handful of normalizers, pre-tokenizers and decoders, and their
// Replace steps lengthen a text a few times at most (Llama's " " -> "\u2581" triples a space). A
// tokenizer.json beyond either limit is refused at load: eight chained Replace steps that each
// multiply by 16 made an 11-character prompt 1.84 GB.
constexpr size_t kMaxTextSteps = 64;
constexpr uint64_t kMaxTextGrowth = 64;

// The largest tokenizer.json read (the biggest published ones are tens of megabytes), and the
// largest tokenizer_config.json / generation_config.json.
constexpr uint64_t kMaxTokenizerJsonBytes = 128u << 20;
constexpr uint64_t kMaxTokenizerCompanionBytes = 16u << 20;

// Parses tokenizer.json text. `source` names the file in error messages.
Result<TokenizerSpec> readTokenizerSpec(const std::string &jsonText, const std::string &source);

} // namespace accel::tokenizer

namespace accel::tokenizer {

// bos_token / eos_token of a tokenizer_config.json (strings or {"content": ...}); empty when
// absent or unreadable, since the file is optional.
struct ConfiguredSpecialTokens {
    std::string bos;
    std::string eos;
};
ConfiguredSpecialTokens readTokenizerConfig(const std::string &jsonText);

// "eos_token_id" of a generation_config.json (a number or a list); empty when absent or unreadable.
std::vector<int32_t> readGenerationConfigEos(const std::string &jsonText);

} // namespace accel::tokenizer
