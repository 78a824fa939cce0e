#include "core/tokenizer/textsteps.h"

#include "core/common/utf8.h"
#include "core/tokenizer/bytelevel.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace accel::tokenizer {

namespace {

bool startsWith(const std::string &text, const std::string &prefix)
{
    return text.compare(0, prefix.size(), prefix) == 0;
}

} // namespace

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

std::string normalize(std::string text, const std::vector<NormalizerStep> &steps, std::string *problem)
{
    for (const NormalizerStep &step : steps) {
        switch (step.kind) {
        case NormalizerStep::Kind::Prepend:
            if (!text.empty())
                text.insert(0, step.text);
            break;
        case NormalizerStep::Kind::Replace:
            if (step.regex) {
                std::string out;
                std::string stopped;
                if (!step.regex->replace(text, step.replacement, out, &stopped) && problem && problem->empty())
                    *problem = stopped;
                text = std::move(out);
            } else {
                replaceAll(text, step.text, step.replacement);
            }
            break;
        }
    }
    return text;
}

namespace {

uint64_t saturatingMultiply(uint64_t a, uint64_t b)
{
    return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

uint64_t saturatingAdd(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

// A Replace of matches at least `matchBytes` long by `replacementBytes`: the text grows at most by
// this factor (rounded up, never below 1).
uint64_t replaceFactor(size_t matchBytes, size_t replacementBytes)
{
    matchBytes = std::max<size_t>(matchBytes, 1);
    return std::max<uint64_t>(1, (replacementBytes + matchBytes - 1) / matchBytes);
}

} // namespace

Growth normalizerGrowth(const std::vector<NormalizerStep> &steps)
{
    Growth growth;
    for (const NormalizerStep &step : steps) {
        if (step.kind == NormalizerStep::Kind::Prepend) {
            growth.added = saturatingAdd(growth.added, step.text.size());
            continue;
        }
        const uint64_t factor =
            replaceFactor(step.regex ? step.regex->minimumMatchBytes() : step.text.size(), step.replacement.size());
        growth.factor = saturatingMultiply(growth.factor, factor);
        growth.added = saturatingMultiply(growth.added, factor);
    }
    return growth;
}

Growth decoderGrowth(const std::vector<DecoderStep> &steps)
{
    Growth growth;
    for (const DecoderStep &step : steps) {
        if (step.kind != DecoderStep::Kind::Replace)
            continue;
        const uint64_t factor =
            replaceFactor(step.regex ? step.regex->minimumMatchBytes() : step.text.size(), step.replacement.size());
        growth.factor = saturatingMultiply(growth.factor, factor);
    }
    return growth;
}

namespace {

// Applies steps[index...] to `word`, handing the finished words to `sink`; false once `sink` asked
// to stop. Each step's pieces go on one at a time, so only one piece per step is held.
bool applySteps(const std::vector<PreTokenizerStep> &steps, size_t index, std::string word, bool startsText,
                const std::function<bool(std::string &&)> &sink, std::string *problem)
{
    if (index == steps.size()) {
        if (word.empty())
            return true;
        return sink(std::move(word));
    }
    const PreTokenizerStep &step = steps[index];
    bool go = true;
    size_t count = 0;
    // Hands one piece of this step on; `startsText` only for the first piece of a text's start.
    const auto next = [&](std::string piece) {
        go = applySteps(steps, index + 1, std::move(piece), startsText && count++ == 0, sink, problem);
        return go;
    };
    const auto split = [&](const std::string &text, SplitBehavior behavior, bool invert, bool byteLevel) {
        std::string stopped;
        const bool complete = step.regex->forEachPiece(
            text, behavior, invert,
            [&](std::string_view piece) {
                return next(byteLevel ? bytelevel::encode(std::string(piece)) : std::string(piece));
            },
            &stopped);
        if (!complete && problem && problem->empty())
            *problem = stopped;
    };
    switch (step.kind) {
    case PreTokenizerStep::Kind::ByteLevel:
        if (step.addPrefixSpace && !startsWith(word, " "))
            word.insert(0, " ");
        if (step.regex)
            split(word, SplitBehavior::Isolated, false, true);
        else
            next(bytelevel::encode(word));
        return go;
    case PreTokenizerStep::Kind::Split:
        split(word, step.behavior, step.invert, false);
        return go;
    case PreTokenizerStep::Kind::Metaspace: {
        replaceAll(word, " ", step.replacement);
        const bool prepend =
            step.prependScheme == PrependScheme::Always || (step.prependScheme == PrependScheme::First && startsText);
        if (prepend && !word.empty() && !startsWith(word, step.replacement))
            word.insert(0, step.replacement);
        if (!step.splitOnReplacement)
            return next(std::move(word));
        // Each replacement character starts a new word ("▁Hello▁world" -> "▁Hello", "▁world").
        size_t start = 0;
        for (size_t hit = word.find(step.replacement, 1); go && hit != std::string::npos;
             hit = word.find(step.replacement, hit + step.replacement.size())) {
            if (hit > start) {
                next(word.substr(start, hit - start));
                start = hit;
            }
        }
        if (go && start < word.size())
            next(word.substr(start));
        return go;
    }
    }
    return go;
}

} // namespace

bool forEachWord(const std::string &text, bool startsText, const std::vector<PreTokenizerStep> &steps,
                 const std::function<bool(std::string &&)> &word, std::string *problem)
{
    std::string stopped;
    applySteps(steps, 0, text, startsText, word, &stopped);
    if (!stopped.empty() && problem)
        *problem = stopped;
    return stopped.empty();
}

std::vector<std::string> preTokenize(const std::string &text, bool startsText,
                                     const std::vector<PreTokenizerStep> &steps)
{
    std::vector<std::string> out;
    forEachWord(text, startsText, steps, [&out](std::string &&word) {
        out.push_back(std::move(word));
        return true;
    });
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
