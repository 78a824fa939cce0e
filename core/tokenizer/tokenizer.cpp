#include "core/tokenizer/tokenizer.h"

#include "core/common/fileutil.h"
#include "core/common/log.h"
#include "core/common/utf8.h"
#include "core/tokenizer/addedtokens.h"
#include "core/tokenizer/bpemodel.h"
#include "core/tokenizer/textsteps.h"
#include "core/tokenizer/tokenizerspec.h"

#include <algorithm>
#include <filesystem>
#include <unordered_map>

namespace accel::tokenizer {

struct Tokenizer::Impl {
    std::string source; // the file, for messages
    std::vector<AddedToken> addedTokens;
    std::unordered_map<int32_t, size_t> addedById;
    std::unordered_map<std::string, int32_t> addedByContent;
    AddedTokenMatcher rawMatcher;        // tokens with normalized: false, matched on the input
    AddedTokenMatcher normalizedMatcher; // tokens with normalized: true, matched after normalizing
    std::vector<NormalizerStep> normalizers;
    std::vector<PreTokenizerStep> preTokenizers;
    std::vector<DecoderStep> decoders;
    std::vector<TemplatePiece> singleTemplate;
    std::unique_ptr<BpeModel> model;
    int32_t bos = -1;
    int32_t eos = -1;
    std::vector<int32_t> extraEos; // from generation_config.json
    size_t vocabSize = 0;

    int32_t idOf(const std::string &token) const
    {
        const auto it = addedByContent.find(token);
        return it != addedByContent.end() ? it->second : model->tokenId(token);
    }
    int32_t firstPresent(std::initializer_list<const char *> names) const
    {
        for (const char *name : names)
            if (const auto it = addedByContent.find(name); it != addedByContent.end())
                return it->second;
        return -1;
    }
    void chooseBosEos(const ConfiguredSpecialTokens &configured);
    // encode() and encodeChecked(): false when a pattern stopped early (`problem`) or the ids passed
    // maxTokens (`overLimit`); `ids` then holds what was read so far (all of the text, with the rest
    // left unsplit, when `lenient` is set and a pattern stopped).
    bool encode(const std::string &text, bool addSpecialTokens, size_t maxTokens, bool lenient,
                std::vector<int32_t> &ids, std::string &problem, bool &overLimit) const;
};

void Tokenizer::Impl::chooseBosEos(const ConfiguredSpecialTokens &configured)
{
    if (!configured.bos.empty())
        bos = idOf(configured.bos);
    if (!configured.eos.empty())
        eos = idOf(configured.eos);
    // The template's special tokens: before the sequence is BOS, after it EOS.
    bool afterSequence = false;
    for (const TemplatePiece &piece : singleTemplate) {
        if (piece.isSequence)
            afterSequence = true;
        else if (!piece.ids.empty() && !afterSequence && bos < 0)
            bos = piece.ids.front();
        else if (!piece.ids.empty() && afterSequence && eos < 0)
            eos = piece.ids.back();
    }
    if (bos < 0)
        bos = firstPresent({"<s>", "<|begin_of_text|>", "<|startoftext|>", "<bos>", "<|endoftext|>"});
    if (eos < 0)
        eos = firstPresent({"</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>", "<|im_end|>", "<|eot_id|>"});
}

Result<Tokenizer> Tokenizer::load(const std::string &path)
{
    std::string file = path;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        file = (std::filesystem::path(path) / "tokenizer.json").string();
    if (!std::filesystem::exists(file, ec))
        return makeError(ErrorCode::NotFound, "no such file", file);
    auto text = fileutil::readFile(file, kMaxTokenizerJsonBytes);
    if (!text)
        return tl::unexpected(text.error());
    auto tokenizer = fromJson(*text, file);
    if (!tokenizer)
        return tokenizer;
    // Still the only owner: the companion files may adjust the special ids.
    auto impl = std::const_pointer_cast<Impl>(tokenizer->m_impl);
    const auto folder = std::filesystem::path(file).parent_path();
    if (std::filesystem::exists(folder / "tokenizer_config.json", ec)) {
        if (auto config =
                fileutil::readFile((folder / "tokenizer_config.json").string(), kMaxTokenizerCompanionBytes)) {
            impl->bos = -1;
            impl->eos = -1;
            impl->chooseBosEos(readTokenizerConfig(*config));
        }
    }
    if (std::filesystem::exists(folder / "generation_config.json", ec)) {
        if (auto config = fileutil::readFile((folder / "generation_config.json").string(), kMaxTokenizerCompanionBytes))
            impl->extraEos = readGenerationConfigEos(*config);
    }
    return tokenizer;
}

Result<Tokenizer> Tokenizer::fromJson(const std::string &jsonText, const std::string &source)
{
    auto spec = readTokenizerSpec(jsonText, source);
    if (!spec)
        return tl::unexpected(spec.error());
    const struct {
        const char *what;
        size_t count;
    } chains[] = {{"normalizer", spec->normalizers.size()},
                  {"pre_tokenizer", spec->preTokenizers.size()},
                  {"decoder", spec->decoders.size()}};
    for (const auto &chain : chains)
        if (chain.count > kMaxTextSteps)
            return makeError(ErrorCode::InvalidInput,
                             std::string(chain.what) + ": " + std::to_string(chain.count) + " steps (the limit is " +
                                 std::to_string(kMaxTextSteps) + ")",
                             source);
    const struct {
        const char *what;
        uint64_t factor;
    } growths[] = {{"normalizer", normalizerGrowth(spec->normalizers).factor},
                   {"decoder", decoderGrowth(spec->decoders).factor}};
    for (const auto &growth : growths)
        if (growth.factor > kMaxTextGrowth)
            return makeError(ErrorCode::InvalidInput,
                             std::string(growth.what) + ": its Replace steps can make a text " +
                                 (growth.factor == UINT64_MAX ? std::string("more than 18446744073709551614")
                                                              : std::to_string(growth.factor)) +
                                 " times longer (the limit is " + std::to_string(kMaxTextGrowth) + ")",
                             source);
    auto model = BpeModel::create(spec->model, source);
    if (!model)
        return tl::unexpected(model.error());

    auto impl = std::make_shared<Impl>();
    impl->source = source;
    impl->model = std::move(*model);
    impl->normalizers = std::move(spec->normalizers);
    impl->preTokenizers = std::move(spec->preTokenizers);
    impl->decoders = std::move(spec->decoders);
    impl->singleTemplate = std::move(spec->singleTemplate);
    impl->addedTokens = std::move(spec->addedTokens);
    impl->vocabSize = static_cast<size_t>(impl->model->maxId() + 1);

    std::vector<AddedToken> raw, normalized;
    std::vector<std::string> rawContents, normalizedContents;
    for (size_t i = 0; i < impl->addedTokens.size(); ++i) {
        const AddedToken &token = impl->addedTokens[i];
        impl->addedById[token.id] = i;
        impl->addedByContent[token.content] = token.id;
        impl->vocabSize = std::max(impl->vocabSize, static_cast<size_t>(token.id) + 1);
        if (token.normalized) {
            normalized.push_back(token);
            normalizedContents.push_back(normalize(token.content, impl->normalizers));
        } else {
            raw.push_back(token);
            rawContents.push_back(token.content);
        }
    }
    impl->rawMatcher = AddedTokenMatcher(raw, rawContents);
    impl->normalizedMatcher = AddedTokenMatcher(normalized, normalizedContents);
    impl->chooseBosEos({});

    Tokenizer tokenizer;
    tokenizer.m_impl = std::move(impl);
    return tokenizer;
}

bool Tokenizer::Impl::encode(const std::string &text, bool addSpecialTokens, size_t maxTokens, bool lenient,
                             std::vector<int32_t> &ids, std::string &problem, bool &overLimit) const
{
    // The template's own tokens count against the limit too.
    size_t templateTokens = 0;
    if (addSpecialTokens)
        for (const TemplatePiece &piece : singleTemplate)
            templateTokens += piece.isSequence ? 0 : piece.ids.size();
    const size_t limit = maxTokens >= templateTokens ? maxTokens - templateTokens : 0;
    const auto within = [&] {
        if (ids.size() <= limit)
            return true;
        overLimit = true;
        return false;
    };
    std::vector<TextPiece> pieces;
    rawMatcher.split({utf8::toValid(text), -1, true}, pieces);
    std::vector<TextPiece> normalizedPieces;
    for (TextPiece &piece : pieces) {
        if (piece.tokenId >= 0) {
            ids.push_back(piece.tokenId);
            if (!within())
                return false;
            continue;
        }
        normalizedPieces.clear();
        std::string stopped;
        std::string normalized = normalize(std::move(piece.text), normalizers, &stopped);
        if (!stopped.empty() && !lenient) {
            problem = stopped;
            return false;
        }
        if (!stopped.empty() && problem.empty())
            problem = stopped;
        normalizedMatcher.split({std::move(normalized), -1, piece.startsText}, normalizedPieces);
        for (const TextPiece &sub : normalizedPieces) {
            if (sub.tokenId >= 0) {
                ids.push_back(sub.tokenId);
                if (!within())
                    return false;
                continue;
            }
            stopped.clear();
            const bool complete = forEachWord(
                sub.text, sub.startsText, preTokenizers,
                [&](std::string &&word) {
                    // A word longer than the tokens left may not fit: a lower bound decides it
                    // before merging (a 60 MB word needs about 1 GB of merge state).
                    if (word.size() > limit - ids.size() && ids.size() + model->minimumTokens(word) > limit) {
                        overLimit = true;
                        return false;
                    }
                    model->tokenize(word, ids);
                    return within();
                },
                &stopped);
            if (overLimit)
                return false;
            if (!complete && !lenient) {
                problem = stopped;
                return false;
            }
            if (!complete && problem.empty())
                problem = stopped;
        }
    }
    if (!addSpecialTokens || singleTemplate.empty())
        return true;
    std::vector<int32_t> withTemplate;
    withTemplate.reserve(ids.size() + templateTokens);
    for (const TemplatePiece &piece : singleTemplate) {
        if (piece.isSequence)
            withTemplate.insert(withTemplate.end(), ids.begin(), ids.end());
        else
            withTemplate.insert(withTemplate.end(), piece.ids.begin(), piece.ids.end());
    }
    ids = std::move(withTemplate);
    return true;
}

std::vector<int32_t> Tokenizer::encode(const std::string &text, bool addSpecialTokens) const
{
    if (!m_impl)
        return {};
    std::vector<int32_t> ids;
    std::string problem;
    bool overLimit = false;
    m_impl->encode(text, addSpecialTokens, SIZE_MAX, true, ids, problem, overLimit);
    if (!problem.empty())
        log::warning("tokenizer", m_impl->source + ": " + problem + "; the rest of the text was left unsplit");
    return ids;
}

Result<std::vector<int32_t>> Tokenizer::encodeChecked(const std::string &text, bool addSpecialTokens,
                                                      size_t maxTokens) const
{
    if (!m_impl)
        return std::vector<int32_t>();
    std::vector<int32_t> ids;
    std::string problem;
    bool overLimit = false;
    if (m_impl->encode(text, addSpecialTokens, maxTokens, false, ids, problem, overLimit))
        return ids;
    if (overLimit)
        return makeError(ErrorCode::InvalidInput, "more than " + std::to_string(maxTokens) + " tokens");
    return makeError(ErrorCode::InvalidInput, problem, m_impl->source);
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids, bool skipSpecialTokens) const
{
    if (!m_impl)
        return {};
    const Impl &d = *m_impl;
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (const int32_t id : ids) {
        if (const auto it = d.addedById.find(id); it != d.addedById.end()) {
            if (!(skipSpecialTokens && d.addedTokens[it->second].special))
                tokens.push_back(d.addedTokens[it->second].content);
        } else if (const std::string *text = d.model->tokenText(id)) {
            tokens.push_back(*text);
        }
    }
    return decodeTokens(std::move(tokens), d.decoders);
}

std::string Tokenizer::tokenText(int32_t id) const
{
    if (!m_impl)
        return {};
    if (const auto it = m_impl->addedById.find(id); it != m_impl->addedById.end())
        return m_impl->addedTokens[it->second].content;
    const std::string *text = m_impl->model->tokenText(id);
    return text ? *text : std::string();
}

int32_t Tokenizer::tokenId(const std::string &token) const
{
    return m_impl ? m_impl->idOf(token) : -1;
}

bool Tokenizer::isSpecial(int32_t id) const
{
    if (!m_impl)
        return false;
    const auto it = m_impl->addedById.find(id);
    return it != m_impl->addedById.end() && m_impl->addedTokens[it->second].special;
}

int32_t Tokenizer::bosId() const
{
    return m_impl ? m_impl->bos : -1;
}

int32_t Tokenizer::eosId() const
{
    return m_impl ? m_impl->eos : -1;
}

std::vector<int32_t> Tokenizer::eosIds() const
{
    std::vector<int32_t> ids;
    if (!m_impl)
        return ids;
    if (m_impl->eos >= 0)
        ids.push_back(m_impl->eos);
    for (const int32_t id : m_impl->extraEos)
        if (std::find(ids.begin(), ids.end(), id) == ids.end())
            ids.push_back(id);
    return ids;
}

size_t Tokenizer::vocabSize() const
{
    return m_impl ? m_impl->vocabSize : 0;
}

} // namespace accel::tokenizer
