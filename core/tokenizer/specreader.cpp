// Reads tokenizer.json with nlohmann::json into a TokenizerSpec. Every shape or feature outside
// what the tokenizer implements becomes an Error that names the JSON path and the supported
// alternatives.
#include "core/tokenizer/tokenizerspec.h"

#include "core/common/jsondocument.h"

namespace accel::tokenizer {

namespace {

using json = nlohmann::json;

// Ids index tables, so a typo such as 3200000000 must not allocate gigabytes.
constexpr int64_t kMaxId = 16 * 1024 * 1024;

class SpecReader {
public:
    explicit SpecReader(std::string source) : m_source(std::move(source)) {}

    Result<TokenizerSpec> read(const std::string &text);

private:
    tl::unexpected<Error> invalid(const std::string &path, const std::string &what) const
    {
        return makeError(ErrorCode::InvalidInput, path + ": " + what, m_source);
    }
    tl::unexpected<Error> unsupported(const std::string &path, const std::string &value,
                                      const std::string &supported) const
    {
        return makeError(ErrorCode::Unsupported,
                         path + ": " + value + " is not supported (supported: " + supported + ")", m_source);
    }

    Result<std::string> typeOf(const json &node, const std::string &path) const;
    struct Pattern {
        std::string literal;
        std::optional<RegexSplitter> regex;
    };
    Result<Pattern> replacePattern(const json &node, const std::string &path) const;
    Result<void> readAddedTokens(const json &node, TokenizerSpec &spec) const;
    Result<void> readNormalizer(const json &node, const std::string &path, TokenizerSpec &spec) const;
    Result<void> readPreTokenizer(const json &node, const std::string &path, TokenizerSpec &spec) const;
    Result<void> readDecoder(const json &node, const std::string &path, TokenizerSpec &spec) const;
    Result<void> readPostProcessor(const json &node, const std::string &path, TokenizerSpec &spec) const;
    Result<void> readModel(const json &node, TokenizerSpec &spec) const;
    Result<int32_t> specialTokenId(const TokenizerSpec &spec, const std::string &content,
                                   const std::string &path) const;

    std::string m_source;
};

std::optional<SplitBehavior> splitBehavior(const std::string &name)
{
    if (name == "Removed")
        return SplitBehavior::Removed;
    if (name == "Isolated")
        return SplitBehavior::Isolated;
    if (name == "MergedWithPrevious")
        return SplitBehavior::MergedWithPrevious;
    if (name == "MergedWithNext")
        return SplitBehavior::MergedWithNext;
    if (name == "Contiguous")
        return SplitBehavior::Contiguous;
    return std::nullopt;
}

bool boolOr(const json &node, const char *key, bool fallback)
{
    const auto it = node.find(key);
    return it != node.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string stringOr(const json &node, const char *key, const std::string &fallback)
{
    const auto it = node.find(key);
    return it != node.end() && it->is_string() ? it->get<std::string>() : fallback;
}

Result<std::string> SpecReader::typeOf(const json &node, const std::string &path) const
{
    if (!node.is_object())
        return invalid(path, "expected an object, got " + std::string(node.type_name()));
    const auto it = node.find("type");
    if (it == node.end() || !it->is_string())
        return invalid(path + ".type", "missing or not a string");
    return it->get<std::string>();
}

// Replace patterns: {"String": "x"} (literal, not empty) or {"Regex": "..."}.
Result<SpecReader::Pattern> SpecReader::replacePattern(const json &node, const std::string &path) const
{
    const auto it = node.find("pattern");
    Pattern pattern;
    if (it != node.end() && it->is_object() && it->contains("String") && (*it)["String"].is_string()) {
        pattern.literal = (*it)["String"].get<std::string>();
        if (pattern.literal.empty())
            return invalid(path + ".pattern", "empty String pattern");
        return pattern;
    }
    if (it != node.end() && it->is_object() && it->contains("Regex") && (*it)["Regex"].is_string()) {
        auto regex = RegexSplitter::create((*it)["Regex"].get<std::string>());
        if (!regex)
            return invalid(path + ".pattern", regex.error().message);
        pattern.regex = std::move(*regex);
        return pattern;
    }
    return invalid(path + ".pattern", "expected {\"String\": ...} or {\"Regex\": ...}");
}

Result<void> SpecReader::readAddedTokens(const json &node, TokenizerSpec &spec) const
{
    if (node.is_null())
        return {};
    if (!node.is_array())
        return invalid("added_tokens", "expected an array");
    for (size_t i = 0; i < node.size(); ++i) {
        const json &entry = node[i];
        const std::string path = "added_tokens[" + std::to_string(i) + "]";
        if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_number_integer() ||
            !entry.contains("content") || !entry["content"].is_string())
            return invalid(path, "expected an object with an integer \"id\" and a string \"content\"");
        AddedToken token;
        token.id = entry["id"].get<int32_t>();
        token.content = entry["content"].get<std::string>();
        token.special = boolOr(entry, "special", false);
        token.singleWord = boolOr(entry, "single_word", false);
        token.lstrip = boolOr(entry, "lstrip", false);
        token.rstrip = boolOr(entry, "rstrip", false);
        token.normalized = boolOr(entry, "normalized", !token.special);
        if (entry["id"].get<int64_t>() < 0 || entry["id"].get<int64_t>() > kMaxId)
            return invalid(path + ".id", "expected an id from 0 to " + std::to_string(kMaxId) + ", got " +
                                             jsonutil::jsonExcerpt(entry["id"]));
        spec.addedTokens.push_back(std::move(token));
    }
    return {};
}

Result<void> SpecReader::readNormalizer(const json &node, const std::string &path, TokenizerSpec &spec) const
{
    if (node.is_null())
        return {};
    auto type = typeOf(node, path);
    if (!type)
        return tl::unexpected(type.error());
    if (*type == "Sequence") {
        const auto it = node.find("normalizers");
        if (it == node.end() || !it->is_array())
            return invalid(path + ".normalizers", "expected an array");
        for (size_t i = 0; i < it->size(); ++i)
            if (auto r = readNormalizer((*it)[i], path + ".normalizers[" + std::to_string(i) + "]", spec); !r)
                return r;
        return {};
    }
    if (*type == "Prepend") {
        spec.normalizers.push_back(
            {NormalizerStep::Kind::Prepend, stringOr(node, "prepend", "\xE2\x96\x81"), {}, std::nullopt});
        return {};
    }
    if (*type == "Replace") {
        auto pattern = replacePattern(node, path);
        if (!pattern)
            return tl::unexpected(pattern.error());
        spec.normalizers.push_back({NormalizerStep::Kind::Replace, pattern->literal, stringOr(node, "content", ""),
                                    std::move(pattern->regex)});
        return {};
    }
    return unsupported(path + ".type", *type, "Prepend, Replace, Sequence");
}

Result<void> SpecReader::readPreTokenizer(const json &node, const std::string &path, TokenizerSpec &spec) const
{
    if (node.is_null())
        return {};
    auto type = typeOf(node, path);
    if (!type)
        return tl::unexpected(type.error());
    PreTokenizerStep step;
    if (*type == "Sequence") {
        const auto it = node.find("pretokenizers");
        if (it == node.end() || !it->is_array())
            return invalid(path + ".pretokenizers", "expected an array");
        for (size_t i = 0; i < it->size(); ++i)
            if (auto r = readPreTokenizer((*it)[i], path + ".pretokenizers[" + std::to_string(i) + "]", spec); !r)
                return r;
        return {};
    }
    if (*type == "ByteLevel") {
        step.kind = PreTokenizerStep::Kind::ByteLevel;
        step.addPrefixSpace = boolOr(node, "add_prefix_space", true);
        if (boolOr(node, "use_regex", true)) {
            auto regex = RegexSplitter::create(RegexSplitter::gpt2Pattern());
            if (!regex)
                return makeError(ErrorCode::Internal, regex.error().message, m_source);
            step.regex = std::move(*regex);
        }
    } else if (*type == "Metaspace") {
        step.kind = PreTokenizerStep::Kind::Metaspace;
        step.replacement = stringOr(node, "replacement", "\xE2\x96\x81");
        step.splitOnReplacement = boolOr(node, "split", true);
        const std::string scheme =
            stringOr(node, "prepend_scheme", boolOr(node, "add_prefix_space", true) ? "always" : "never");
        if (scheme == "always")
            step.prependScheme = PrependScheme::Always;
        else if (scheme == "first")
            step.prependScheme = PrependScheme::First;
        else if (scheme == "never")
            step.prependScheme = PrependScheme::Never;
        else
            return invalid(path + ".prepend_scheme", "expected one of always, first, never; got " + scheme);
        if (step.replacement.empty())
            return invalid(path + ".replacement", "empty replacement");
    } else if (*type == "Split") {
        step.kind = PreTokenizerStep::Kind::Split;
        const std::string behavior = stringOr(node, "behavior", "");
        const auto known = splitBehavior(behavior);
        if (!known)
            return invalid(path + ".behavior", "expected one of Removed, Isolated, MergedWithPrevious, MergedWithNext, "
                                               "Contiguous; got \"" +
                                                   behavior + "\"");
        step.behavior = *known;
        step.invert = boolOr(node, "invert", false);
        const auto it = node.find("pattern");
        std::string pattern;
        if (it != node.end() && it->is_object() && it->contains("Regex") && (*it)["Regex"].is_string())
            pattern = (*it)["Regex"].get<std::string>();
        else if (it != node.end() && it->is_object() && it->contains("String") && (*it)["String"].is_string())
            pattern = "\\Q" + (*it)["String"].get<std::string>() + "\\E";
        else
            return invalid(path + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
        auto regex = RegexSplitter::create(pattern);
        if (!regex)
            return invalid(path + ".pattern", regex.error().message);
        step.regex = std::move(*regex);
    } else if (*type == "Digits" || *type == "Whitespace" || *type == "WhitespaceSplit" || *type == "Punctuation") {
        // Fixed splits, expressed as the Split they amount to.
        step.kind = PreTokenizerStep::Kind::Split;
        std::string pattern;
        if (*type == "Digits") {
            pattern = boolOr(node, "individual_digits", false) ? "\\p{N}" : "\\p{N}+";
        } else if (*type == "Whitespace") {
            pattern = "\\w+|[^\\w\\s]+"; // keep words and runs of punctuation, drop the spaces
            step.behavior = SplitBehavior::Removed;
            step.invert = true;
        } else if (*type == "WhitespaceSplit") {
            pattern = "\\s+";
            step.behavior = SplitBehavior::Removed;
        } else {
            pattern = "[\\p{P}!-/:-@\\[-`{-~]";
            const auto known = splitBehavior(stringOr(node, "behavior", "Isolated"));
            if (!known)
                return invalid(path + ".behavior", "expected one of Removed, Isolated, MergedWithPrevious, "
                                                   "MergedWithNext, Contiguous");
            step.behavior = *known;
        }
        auto regex = RegexSplitter::create(pattern);
        if (!regex)
            return makeError(ErrorCode::Internal, regex.error().message, m_source);
        step.regex = std::move(*regex);
    } else {
        return unsupported(path + ".type", *type,
                           "ByteLevel, Metaspace, Split, Digits, Whitespace, WhitespaceSplit, Punctuation, Sequence");
    }
    spec.preTokenizers.push_back(std::move(step));
    return {};
}

Result<void> SpecReader::readDecoder(const json &node, const std::string &path, TokenizerSpec &spec) const
{
    if (node.is_null())
        return {};
    auto type = typeOf(node, path);
    if (!type)
        return tl::unexpected(type.error());
    DecoderStep step;
    if (*type == "Sequence") {
        const auto it = node.find("decoders");
        if (it == node.end() || !it->is_array())
            return invalid(path + ".decoders", "expected an array");
        for (size_t i = 0; i < it->size(); ++i)
            if (auto r = readDecoder((*it)[i], path + ".decoders[" + std::to_string(i) + "]", spec); !r)
                return r;
        return {};
    }
    if (*type == "ByteLevel") {
        step.kind = DecoderStep::Kind::ByteLevel;
    } else if (*type == "Metaspace") {
        step.kind = DecoderStep::Kind::Metaspace;
        step.text = stringOr(node, "replacement", "\xE2\x96\x81");
        const std::string scheme =
            stringOr(node, "prepend_scheme", boolOr(node, "add_prefix_space", true) ? "always" : "never");
        step.prependScheme = scheme == "never" ? PrependScheme::Never : PrependScheme::Always;
    } else if (*type == "Replace") {
        step.kind = DecoderStep::Kind::Replace;
        auto pattern = replacePattern(node, path);
        if (!pattern)
            return tl::unexpected(pattern.error());
        step.text = pattern->literal;
        step.regex = std::move(pattern->regex);
        step.replacement = stringOr(node, "content", "");
    } else if (*type == "ByteFallback") {
        step.kind = DecoderStep::Kind::ByteFallback;
    } else if (*type == "Fuse") {
        step.kind = DecoderStep::Kind::Fuse;
    } else if (*type == "Strip") {
        step.kind = DecoderStep::Kind::Strip;
        step.text = stringOr(node, "content", " ");
        const auto start = node.find("start");
        const auto stop = node.find("stop");
        step.stripStart = start != node.end() && start->is_number_unsigned() ? start->get<size_t>() : 0;
        step.stripStop = stop != node.end() && stop->is_number_unsigned() ? stop->get<size_t>() : 0;
        if (step.text.empty())
            return invalid(path + ".content", "empty content");
    } else {
        return unsupported(path + ".type", *type, "ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence");
    }
    spec.decoders.push_back(std::move(step));
    return {};
}

Result<int32_t> SpecReader::specialTokenId(const TokenizerSpec &spec, const std::string &content,
                                           const std::string &path) const
{
    for (const AddedToken &token : spec.addedTokens)
        if (token.content == content)
            return token.id;
    for (const auto &[text, id] : spec.model.vocab)
        if (text == content)
            return id;
    return invalid(path, "special token \"" + content + "\" is neither an added token nor in the vocabulary");
}

Result<void> SpecReader::readPostProcessor(const json &node, const std::string &path, TokenizerSpec &spec) const
{
    if (node.is_null())
        return {};
    auto type = typeOf(node, path);
    if (!type)
        return tl::unexpected(type.error());
    if (*type == "ByteLevel")
        return {}; // only adjusts offsets, which Accel Studio does not report
    if (*type == "Sequence") {
        const auto it = node.find("processors");
        if (it == node.end() || !it->is_array())
            return invalid(path + ".processors", "expected an array");
        for (size_t i = 0; i < it->size(); ++i)
            if (auto r = readPostProcessor((*it)[i], path + ".processors[" + std::to_string(i) + "]", spec); !r)
                return r;
        return {};
    }
    if (*type == "RobertaProcessing") {
        const auto cls = node.find("cls");
        const auto sep = node.find("sep");
        if (cls == node.end() || sep == node.end() || !cls->is_array() || !sep->is_array() || cls->size() != 2 ||
            sep->size() != 2 || !(*cls)[1].is_number_integer() || !(*sep)[1].is_number_integer())
            return invalid(path, "expected \"cls\" and \"sep\" as [token, id]");
        spec.singleTemplate = {{false, {(*cls)[1].get<int32_t>()}}, {true, {}}, {false, {(*sep)[1].get<int32_t>()}}};
        return {};
    }
    if (*type != "TemplateProcessing")
        return unsupported(path + ".type", *type, "TemplateProcessing, RobertaProcessing, ByteLevel, Sequence");
    const auto single = node.find("single");
    if (single == node.end() || !single->is_array())
        return invalid(path + ".single", "expected an array");
    const json specialTokens = node.value("special_tokens", json::object());
    spec.singleTemplate.clear();
    for (size_t i = 0; i < single->size(); ++i) {
        const json &item = (*single)[i];
        const std::string itemPath = path + ".single[" + std::to_string(i) + "]";
        if (item.is_object() && item.contains("Sequence")) {
            spec.singleTemplate.push_back({true, {}});
        } else if (item.is_object() && item.contains("SpecialToken") && item["SpecialToken"].is_object()) {
            const std::string name = stringOr(item["SpecialToken"], "id", "");
            TemplatePiece piece;
            const auto entry = specialTokens.find(name);
            if (entry != specialTokens.end() && entry->is_object() && entry->contains("ids") &&
                (*entry)["ids"].is_array()) {
                for (const json &id : (*entry)["ids"]) {
                    if (!id.is_number_integer())
                        return invalid(path + ".special_tokens." + name + ".ids", "expected integers");
                    piece.ids.push_back(id.get<int32_t>());
                }
            } else {
                auto id = specialTokenId(spec, name, itemPath);
                if (!id)
                    return tl::unexpected(id.error());
                piece.ids.push_back(*id);
            }
            spec.singleTemplate.push_back(std::move(piece));
        } else {
            return invalid(itemPath, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
        }
    }
    return {};
}

Result<void> SpecReader::readModel(const json &node, TokenizerSpec &spec) const
{
    if (!node.is_object())
        return invalid("model", "missing or not an object");
    const std::string type = stringOr(node, "type", node.contains("merges") ? "BPE" : "");
    if (type != "BPE")
        return unsupported("model.type", type.empty() ? "a model without \"type\"" : type, "BPE");
    if (const auto it = node.find("dropout"); it != node.end() && it->is_number() && it->get<double>() > 0.0)
        return unsupported("model.dropout", std::to_string(it->get<double>()), "null or 0");
    for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"})
        if (!stringOr(node, key, "").empty())
            return unsupported(std::string("model.") + key, "\"" + stringOr(node, key, "") + "\"", "null");
    BpeSpec &model = spec.model;
    if (const auto unk = node.find("unk_token"); unk != node.end() && unk->is_string())
        model.unkToken = unk->get<std::string>();
    model.fuseUnk = boolOr(node, "fuse_unk", false);
    model.byteFallback = boolOr(node, "byte_fallback", false);
    model.ignoreMerges = boolOr(node, "ignore_merges", false);

    const auto vocab = node.find("vocab");
    if (vocab == node.end() || !vocab->is_object())
        return invalid("model.vocab", "missing or not an object of token: id");
    model.vocab.reserve(vocab->size());
    for (auto it = vocab->begin(); it != vocab->end(); ++it) {
        if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > kMaxId)
            return invalid("model.vocab." + it.key(), "expected an integer id from 0 to " + std::to_string(kMaxId) +
                                                          ", got " + jsonutil::jsonExcerpt(it.value()));
        model.vocab.emplace_back(it.key(), it.value().get<int32_t>());
    }
    const auto merges = node.find("merges");
    if (merges == node.end() || merges->is_null())
        return {};
    if (!merges->is_array())
        return invalid("model.merges", "expected an array");
    model.merges.reserve(merges->size());
    for (size_t i = 0; i < merges->size(); ++i) {
        const json &merge = (*merges)[i];
        auto path = [i]() { return "model.merges[" + std::to_string(i) + "]"; };
        if (merge.is_string()) {
            const std::string &text = merge.get_ref<const std::string &>();
            const size_t space = text.find(' ');
            if (space == std::string::npos || space == 0 || space + 1 >= text.size() ||
                text.find(' ', space + 1) != std::string::npos)
                return invalid(path(), "expected \"left right\" (two tokens and one space), got \"" + text + "\"");
            model.merges.emplace_back(text.substr(0, space), text.substr(space + 1));
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
            model.merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
        } else {
            return invalid(path(),
                           "expected \"left right\" or [\"left\", \"right\"], got " + jsonutil::jsonExcerpt(merge));
        }
    }
    return {};
}

Result<TokenizerSpec> SpecReader::read(const std::string &text)
{
    jsonutil::JsonLimits limits;
    limits.maxBytes = kMaxTokenizerJsonBytes;
    auto parsed = jsonutil::parseJson(text, m_source, limits);
    if (!parsed)
        return tl::unexpected(parsed.error());
    const json &root = *parsed;
    if (!root.is_object())
        return invalid("(root)", "expected an object, got " + std::string(root.type_name()));
    try {
        TokenizerSpec spec;
        // References into the document: json::value() would copy the whole vocabulary.
        static const json null;
        auto member = [&root](const char *key) -> const json & {
            const auto it = root.find(key);
            return it == root.end() ? null : *it;
        };
        if (auto r = readAddedTokens(member("added_tokens"), spec); !r)
            return tl::unexpected(r.error());
        if (auto r = readModel(member("model"), spec); !r)
            return tl::unexpected(r.error());
        if (auto r = readNormalizer(member("normalizer"), "normalizer", spec); !r)
            return tl::unexpected(r.error());
        if (auto r = readPreTokenizer(member("pre_tokenizer"), "pre_tokenizer", spec); !r)
            return tl::unexpected(r.error());
        if (auto r = readDecoder(member("decoder"), "decoder", spec); !r)
            return tl::unexpected(r.error());
        if (auto r = readPostProcessor(member("post_processor"), "post_processor", spec); !r)
            return tl::unexpected(r.error());
        return spec;
    } catch (const json::exception &e) {
        return makeError(ErrorCode::InvalidInput, std::string("unexpected structure: ") + e.what(), m_source);
    }
}

} // namespace

Result<TokenizerSpec> readTokenizerSpec(const std::string &jsonText, const std::string &source)
{
    return SpecReader(source).read(jsonText);
}

} // namespace accel::tokenizer

namespace accel::tokenizer {

ConfiguredSpecialTokens readTokenizerConfig(const std::string &jsonText)
{
    ConfiguredSpecialTokens tokens;
    const auto parsed = jsonutil::parseJson(jsonText, {});
    if (!parsed || !parsed->is_object())
        return tokens;
    const nlohmann::json &root = *parsed;
    auto name = [&root](const char *key) -> std::string {
        const auto it = root.find(key);
        if (it == root.end())
            return {};
        if (it->is_string())
            return it->get<std::string>();
        if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
            return (*it)["content"].get<std::string>();
        return {};
    };
    tokens.bos = name("bos_token");
    tokens.eos = name("eos_token");
    return tokens;
}

std::vector<int32_t> readGenerationConfigEos(const std::string &jsonText)
{
    std::vector<int32_t> ids;
    const auto parsed = jsonutil::parseJson(jsonText, {});
    if (!parsed || !parsed->is_object() || !parsed->contains("eos_token_id"))
        return ids;
    const nlohmann::json &root = *parsed;
    const nlohmann::json &eos = root["eos_token_id"];
    auto add = [&ids](const nlohmann::json &value) {
        if (value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() <= kMaxId)
            ids.push_back(value.get<int32_t>());
    };
    if (eos.is_array())
        for (const nlohmann::json &value : eos)
            add(value);
    else
        add(eos);
    return ids;
}

} // namespace accel::tokenizer
