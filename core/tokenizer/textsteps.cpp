#include "core/tokenizer/textsteps.h"

#include "core/common/utf8.h"
#include "core/tokenizer/bytelevel.h"

#include <cstdlib>

namespace accel::tokenizer {

void replaceAll(std::string &text, const std::string &from, const std::string &to)
{
    if (from.empty() || text.find(from) == std::string::npos)
        return;
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    for (size_t hit = text.find(from); hit != std::string::npos; hit = text.find(from, pos)) {
        out.append(text, pos, hit - pos);
        out += to;
        pos = hit + from.size();
    }
    out.append(text, pos, std::string::npos);
    text = std::move(out);
}

std::string normalize(std::string text, const std::vector<NormalizerStep> &steps)
{
    for (const NormalizerStep &step : steps) {
        switch (step.kind) {
        case NormalizerStep::Kind::Prepend:
            if (!text.empty())
                text.insert(0, step.text);
            break;
        case NormalizerStep::Kind::Replace:
            if (step.regex)
                text = step.regex->replace(text, step.replacement);
            else
                replaceAll(text, step.text, step.replacement);
            break;
        }
    }
    return text;
}

namespace {

struct Word {
    std::string text;
    bool startsText;
};

bool startsWith(const std::string &text, const std::string &prefix)
{
    return text.compare(0, prefix.size(), prefix) == 0;
}

void applyStep(const PreTokenizerStep &step, Word word, std::vector<Word> &out)
{
    std::vector<std::string> parts;
    switch (step.kind) {
    case PreTokenizerStep::Kind::ByteLevel:
        if (step.addPrefixSpace && !startsWith(word.text, " "))
            word.text.insert(0, " ");
        if (step.regex)
            step.regex->split(word.text, parts);
        else
            parts.push_back(word.text);
        for (size_t i = 0; i < parts.size(); ++i)
            out.push_back({bytelevel::encode(parts[i]), word.startsText && i == 0});
        return;
    case PreTokenizerStep::Kind::Split:
        step.regex->split(word.text, parts, step.behavior, step.invert);
        for (size_t i = 0; i < parts.size(); ++i)
            out.push_back({std::move(parts[i]), word.startsText && i == 0});
        return;
    case PreTokenizerStep::Kind::Metaspace: {
        replaceAll(word.text, " ", step.replacement);
        const bool prepend = step.prependScheme == PrependScheme::Always ||
                             (step.prependScheme == PrependScheme::First && word.startsText);
        if (prepend && !word.text.empty() && !startsWith(word.text, step.replacement))
            word.text.insert(0, step.replacement);
        if (!step.splitOnReplacement) {
            out.push_back(std::move(word));
            return;
        }
        // Each replacement character starts a new word ("▁Hello▁world" -> "▁Hello", "▁world").
        size_t start = 0;
        for (size_t hit = word.text.find(step.replacement, 1); hit != std::string::npos;
             hit = word.text.find(step.replacement, hit + step.replacement.size())) {
            if (hit > start) {
                out.push_back({word.text.substr(start, hit - start), word.startsText && start == 0});
                start = hit;
            }
        }
        if (start < word.text.size())
            out.push_back({word.text.substr(start), word.startsText && start == 0});
        return;
    }
    }
}

} // namespace

std::vector<std::string> preTokenize(const std::string &text, bool startsText,
                                     const std::vector<PreTokenizerStep> &steps)
{
    std::vector<Word> words{{text, startsText}};
    for (const PreTokenizerStep &step : steps) {
        std::vector<Word> next;
        next.reserve(words.size());
        for (Word &word : words)
            applyStep(step, std::move(word), next);
        words = std::move(next);
    }
    std::vector<std::string> out;
    out.reserve(words.size());
    for (Word &word : words)
        if (!word.text.empty())
            out.push_back(std::move(word.text));
    return out;
}

namespace {

// "<0xNN>" -> NN, or -1.
int byteToken(const std::string &token)
{
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>')
        return -1;
    char *end = nullptr;
    const std::string hex = token.substr(3, 2);
    const long value = std::strtol(hex.c_str(), &end, 16);
    return end == hex.c_str() + 2 ? static_cast<int>(value) : -1;
}

std::vector<std::string> byteFallback(std::vector<std::string> tokens)
{
    std::vector<std::string> out;
    std::string bytes;
    size_t count = 0;
    auto flush = [&]() {
        if (count == 0)
            return;
        if (utf8::isValid(bytes)) {
            out.push_back(bytes);
        } else {
            for (size_t i = 0; i < count; ++i)
                out.emplace_back(utf8::kReplacement);
        }
        bytes.clear();
        count = 0;
    };
    for (std::string &token : tokens) {
        const int byte = byteToken(token);
        if (byte >= 0) {
            bytes.push_back(static_cast<char>(byte));
            ++count;
            continue;
        }
        flush();
        out.push_back(std::move(token));
    }
    flush();
    return out;
}

void strip(std::string &token, const std::string &content, size_t start, size_t stop)
{
    for (size_t i = 0; i < start && startsWith(token, content); ++i)
        token.erase(0, content.size());
    for (size_t i = 0; i < stop && token.size() >= content.size() &&
                       token.compare(token.size() - content.size(), content.size(), content) == 0;
         ++i)
        token.erase(token.size() - content.size());
}

} // namespace

std::string decodeTokens(std::vector<std::string> tokens, const std::vector<DecoderStep> &steps)
{
    if (steps.empty()) { // a file without a decoder shows the tokens separated by spaces
        std::string text;
        for (size_t i = 0; i < tokens.size(); ++i)
            text += (i ? " " : "") + tokens[i];
        return utf8::toValid(text);
    }
    for (const DecoderStep &step : steps) {
        switch (step.kind) {
        case DecoderStep::Kind::ByteLevel: {
            std::string bytes;
            for (const std::string &token : tokens) {
                const auto decoded = bytelevel::decode(token);
                bytes += decoded ? *decoded : token;
            }
            tokens = {utf8::toValid(bytes)};
            break;
        }
        case DecoderStep::Kind::Metaspace:
            // The first token loses its replacement characters (the prepended "▁"), the others
            // turn them into spaces.
            for (size_t i = 0; i < tokens.size(); ++i)
                replaceAll(tokens[i], step.text, i == 0 && step.prependScheme != PrependScheme::Never ? "" : " ");
            break;
        case DecoderStep::Kind::Replace:
            for (std::string &token : tokens) {
                if (step.regex)
                    token = step.regex->replace(token, step.replacement);
                else
                    replaceAll(token, step.text, step.replacement);
            }
            break;
        case DecoderStep::Kind::ByteFallback:
            tokens = byteFallback(std::move(tokens));
            break;
        case DecoderStep::Kind::Fuse: {
            std::string all;
            for (const std::string &token : tokens)
                all += token;
            tokens = {std::move(all)};
            break;
        }
        case DecoderStep::Kind::Strip:
            for (std::string &token : tokens)
                strip(token, step.text, step.stripStart, step.stripStop);
            break;
        }
    }
    std::string text;
    for (const std::string &token : tokens)
        text += token;
    return utf8::toValid(text);
}

} // namespace accel::tokenizer
