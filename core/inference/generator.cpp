#include "core/inference/generator.h"

#include "core/inference/causallm.h"
#include "core/inference/inferencemodel.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <limits>

namespace accel::inference {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Next tokens [B] from last-position logits [B, V].
at::Tensor pickTokens(at::Tensor logits, const at::Tensor &seen, const SamplingOptions &o, at::Generator &generator)
{
    if (o.repetitionPenalty != 1.0) {
        auto scores = logits.gather(1, seen);
        scores = at::where(scores < 0, scores * o.repetitionPenalty, scores / o.repetitionPenalty);
        logits = logits.scatter(1, seen, scores);
    }
    if (o.greedy || o.temperature <= 0)
        return logits.argmax(-1);
    logits = logits / o.temperature;
    const float minusInf = -std::numeric_limits<float>::infinity();
    if (o.topK > 0 && o.topK < logits.size(-1)) {
        auto kth = std::get<0>(logits.topk(o.topK, -1)).narrow(-1, o.topK - 1, 1);
        logits = logits.masked_fill(logits < kth, minusInf);
    }
    if (o.topP < 1.0) {
        auto [sorted, order] = logits.sort(-1, /*descending=*/true);
        auto cumulative = sorted.softmax(-1).cumsum(-1);
        // Drop a token when the tokens before it already reach top_p (the first always stays).
        auto drop = (cumulative - sorted.softmax(-1)) >= o.topP;
        logits = logits.scatter(1, order, sorted.masked_fill(drop, minusInf));
    }
    return at::multinomial(logits.softmax(-1), 1, false, generator).squeeze(1);
}

// Length of the longest tail of `text` that is a proper prefix of a stop string.
size_t heldBack(const std::string &text, const std::vector<std::string> &stops)
{
    size_t held = 0;
    for (const auto &stop : stops) {
        if (stop.empty())
            continue;
        for (size_t n = std::min(stop.size() - 1, text.size()); n > held; --n)
            if (text.compare(text.size() - n, n, stop, 0, n) == 0) {
                held = n;
                break;
            }
    }
    return held;
}

} // namespace

size_t promptTokenLimit(const ModelConfig &config, const SamplingOptions &options)
{
    if (config.family != ModelFamily::Gpt2)
        return SIZE_MAX;
    const int64_t room = config.maxPositions - std::max(0, options.maxNewTokens);
    return room > 0 ? static_cast<size_t>(room) : 0;
}

Result<GenerationResult> generate(InferenceModel &model, const std::vector<std::vector<int64_t>> &prompts,
                                  const SamplingOptions &options, const TokenCallback &onToken, const Decoder &decoder)
{
    if (prompts.empty() || prompts.front().empty())
        return makeError(ErrorCode::InvalidInput, "prompt: no input tokens");
    const size_t batch = prompts.size();
    const int64_t promptLength = static_cast<int64_t>(prompts.front().size());
    const ModelConfig &config = model.config();
    for (const auto &p : prompts) {
        if (static_cast<int64_t>(p.size()) != promptLength)
            return makeError(ErrorCode::InvalidInput,
                             "prompts: every sequence of a batch must have the same number of tokens (" +
                                 std::to_string(promptLength) + " vs " + std::to_string(p.size()) + ")");
        for (int64_t t : p)
            if (t < 0 || t >= config.vocabSize)
                return makeError(ErrorCode::InvalidInput, "token id " + std::to_string(t) +
                                                              " is outside the vocabulary (0.." +
                                                              std::to_string(config.vocabSize - 1) + ")");
    }
    if (options.maxNewTokens < 0)
        return makeError(ErrorCode::InvalidInput,
                         "max new tokens: expected >= 0; got " + std::to_string(options.maxNewTokens));
    if (static_cast<uint64_t>(promptLength) > promptTokenLimit(config, options))
        return makeError(ErrorCode::InvalidInput, "prompt (" + std::to_string(promptLength) +
                                                      " tokens) + max new tokens (" +
                                                      std::to_string(options.maxNewTokens) + ") exceed n_positions " +
                                                      std::to_string(config.maxPositions));
    if (!options.stopStrings.empty() && !decoder)
        return makeError(ErrorCode::InvalidInput, "stop strings need a tokenizer to decode the generated text");
    if (options.topP <= 0 || options.topP > 1)
        return makeError(ErrorCode::InvalidInput, "top-p: expected 0 < p <= 1; got " + std::to_string(options.topP));
    const std::vector<int64_t> stopTokens = options.stopTokenIds.empty() ? config.eosTokenIds : options.stopTokenIds;

    GenerationResult result;
    result.sequences.resize(batch);
    result.stats.promptTokens = promptLength;
    std::vector<bool> done(batch, false);
    std::vector<std::string> shownText(batch);
    std::vector<std::string> decodedText(batch); // streaming: all text so far, before any stop cut
    std::vector<Decoder::Stream> streams;
    if (decoder.makeStream)
        for (size_t b = 0; b < batch; ++b)
            streams.push_back(decoder.makeStream());
    size_t longestStop = 0;
    for (const auto &stop : options.stopStrings)
        longestStop = std::max(longestStop, stop.size());
    const bool needRepetitionHistory = options.repetitionPenalty != 1.0;

    try {
        c10::InferenceMode guard;
        auto &lm = model.lm();
        at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(options.seed);
        std::vector<int64_t> flat;
        for (const auto &p : prompts)
            flat.insert(flat.end(), p.begin(), p.end());
        auto ids =
            at::tensor(flat, at::TensorOptions().dtype(at::kLong)).view({static_cast<int64_t>(batch), promptLength});
        at::Tensor seen = ids;
        at::Tensor history = ids; // every position so far, for a cache that must be rebuilt
        KVCache cache;
        const auto start = Clock::now();
        auto logits = lm.forward(ids, &cache, /*lastOnly=*/true).select(1, 0).to(at::kCPU);
        const double prefillMs = msSince(start);
        result.stats.prefillTokensPerSecond = prefillMs > 0 ? 1000.0 * batch * promptLength / prefillMs : 0;
        Clock::time_point decodeStart;
        int64_t decodedSteps = 0;
        for (int step = 0; step < options.maxNewTokens; ++step) {
            auto next = pickTokens(logits, seen, options, generator);
            if (step == 0) {
                result.stats.timeToFirstTokenMs = msSince(start);
                decodeStart = Clock::now();
            }
            ++result.stats.newTokens;
            auto nextCpu = next.contiguous();
            const int64_t *tokens = nextCpu.data_ptr<int64_t>();
            for (size_t b = 0; b < batch; ++b) {
                if (done[b])
                    continue;
                auto &seq = result.sequences[b];
                seq.tokens.push_back(tokens[b]);
                if (!done[b] && std::find(stopTokens.begin(), stopTokens.end(), tokens[b]) != stopTokens.end()) {
                    done[b] = true;
                    seq.stopReason = "stop_token";
                }
                std::string piece;
                if (decoder) {
                    const bool lastStep = done[b] || step + 1 == options.maxNewTokens;
                    std::string text;
                    size_t searchFrom = 0;
                    if (!streams.empty()) {
                        std::string &all = decodedText[b];
                        // A new stop match must end in the new text: look a stop's length back.
                        searchFrom = all.size() > longestStop ? all.size() - longestStop : 0;
                        all += streams[b].push(tokens[b]);
                        if (lastStep)
                            all += streams[b].finish();
                        text = all;
                    } else {
                        text = decoder.full(seq.tokens);
                    }
                    for (const auto &stop : options.stopStrings) {
                        const auto pos = text.find(stop, searchFrom);
                        if (!stop.empty() && pos != std::string::npos) {
                            text.resize(pos);
                            done[b] = true;
                            seq.stopReason = "stop_string";
                        }
                    }
                    // Hold back a tail that may still grow into a stop string; the last step shows all.
                    const bool last = done[b] || step + 1 == options.maxNewTokens;
                    const size_t safe = last ? text.size() : text.size() - heldBack(text, options.stopStrings);
                    const std::string &shown = shownText[b];
                    if (safe >= shown.size() && text.compare(0, shown.size(), shown) == 0) {
                        piece = text.substr(shown.size(), safe - shown.size());
                        shownText[b].append(piece);
                    }
                    seq.text = std::move(text);
                }
                if (onToken && !onToken(b, tokens[b], piece)) {
                    result.cancelled = true;
                }
            }
            if (result.cancelled || std::all_of(done.begin(), done.end(), [](bool d) { return d; }))
                break;
            if (step + 1 == options.maxNewTokens)
                break;
            auto input = next.unsqueeze(1);
            if (needRepetitionHistory)
                seen = at::cat({seen, input}, 1);
            history = at::cat({history, input}, 1);
            if (lm.rebuildsCacheAt(cache.length(), 1)) {
                cache.clear();
                logits = lm.forward(history, &cache, true).select(1, 0).to(at::kCPU);
            } else {
                logits = lm.forward(input, &cache, true).select(1, 0).to(at::kCPU);
            }
            ++decodedSteps;
        }
        if (decodedSteps > 0) {
            const double decodeMs = msSince(decodeStart);
            result.stats.decodeTokensPerSecond = decodeMs > 0 ? 1000.0 * batch * decodedSteps / decodeMs : 0;
        }
        result.stats.totalMs = msSince(start);
    } catch (const c10::Error &e) {
        return makeError(ErrorCode::Failed, std::string("generation failed: ") + e.what_without_backtrace());
    }
    for (size_t b = 0; b < batch; ++b)
        if (result.sequences[b].stopReason.empty())
            result.sequences[b].stopReason = result.cancelled ? "cancelled" : "length";
    return result;
}

} // namespace accel::inference
