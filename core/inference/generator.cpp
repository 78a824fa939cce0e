#include "core/inference/generator.h"

#include "core/inference/causallm.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/intraopteam.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>

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

namespace {

// Turns each new token of a sequence into the result: stop tokens, decoded text, stop strings (a
// tail that may still grow into one is held back) and the streaming callback.
class Emitter {
public:
    Emitter(GenerationResult &result, const SamplingOptions &options, std::vector<int64_t> stopTokens,
            const TokenCallback &onToken, const Decoder &decoder)
        : m_result(result), m_options(options), m_stopTokens(std::move(stopTokens)), m_onToken(onToken),
          m_decoder(decoder), m_done(result.sequences.size(), false), m_shown(result.sequences.size()),
          m_decoded(result.sequences.size())
    {
        if (decoder.makeStream)
            for (size_t b = 0; b < result.sequences.size(); ++b)
                m_streams.push_back(decoder.makeStream());
        for (const auto &stop : options.stopStrings)
            m_longestStop = std::max(m_longestStop, stop.size());
    }

    bool done(size_t b) const { return m_done[b]; }
    bool allDone() const
    {
        return m_result.cancelled || std::all_of(m_done.begin(), m_done.end(), [](bool d) { return d; });
    }

    void emit(size_t b, int64_t token)
    {
        auto &seq = m_result.sequences[b];
        seq.tokens.push_back(token);
        if (std::find(m_stopTokens.begin(), m_stopTokens.end(), token) != m_stopTokens.end()) {
            m_done[b] = true;
            seq.stopReason = "stop_token";
        }
        const bool lastToken = static_cast<int64_t>(seq.tokens.size()) >= m_options.maxNewTokens;
        std::string piece;
        if (m_decoder) {
            const bool lastStep = m_done[b] || lastToken;
            std::string text;
            size_t searchFrom = 0;
            if (!m_streams.empty()) {
                std::string &all = m_decoded[b];
                // A new stop match must end in the new text: look a stop's length back.
                searchFrom = all.size() > m_longestStop ? all.size() - m_longestStop : 0;
                all += m_streams[b].push(token);
                if (lastStep)
                    all += m_streams[b].finish();
                text = all;
            } else {
                text = m_decoder.full(seq.tokens);
            }
            for (const auto &stop : m_options.stopStrings) {
                const auto pos = text.find(stop, searchFrom);
                if (!stop.empty() && pos != std::string::npos) {
                    text.resize(pos);
                    m_done[b] = true;
                    seq.stopReason = "stop_string";
                }
            }
            // Hold back a tail that may still grow into a stop string; the last step shows all.
            const bool last = m_done[b] || lastToken;
            const size_t safe = last ? text.size() : text.size() - heldBack(text, m_options.stopStrings);
            const std::string &shown = m_shown[b];
            if (safe >= shown.size() && text.compare(0, shown.size(), shown) == 0) {
                piece = text.substr(shown.size(), safe - shown.size());
                m_shown[b].append(piece);
            }
            seq.text = std::move(text);
        }
        if (lastToken)
            m_done[b] = true;
        if (m_onToken && !m_onToken(b, token, piece))
            m_result.cancelled = true;
    }

private:
    GenerationResult &m_result;
    const SamplingOptions &m_options;
    const std::vector<int64_t> m_stopTokens;
    const TokenCallback &m_onToken;
    const Decoder &m_decoder;
    std::vector<bool> m_done;
    std::vector<std::string> m_shown;
    std::vector<std::string> m_decoded; // streaming: all text so far, before any stop cut
    std::vector<Decoder::Stream> m_streams;
    size_t m_longestStop = 0;
};

at::Tensor idsTensor(const std::vector<int64_t> &ids)
{
    return at::tensor(ids, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
}

// Forgets the cache's positions after `length` (their buffers are overwritten by the next append).
void truncateCache(KVCache &cache, int64_t length)
{
    if (cache.length() > length)
        cache.advance(length - cache.length());
}

// The last position's logits after the prompt `ids` [B, T] went through the cache `chunk` tokens
// at a time (0: at once). A model whose cache must be rebuilt at a chunk's end (Phi-3's LongRoPE)
// takes everything so far again, as decoding does.
at::Tensor prefill(CausalLM &lm, const at::Tensor &ids, KVCache &cache, int64_t chunk)
{
    const int64_t length = ids.size(1);
    if (chunk <= 0 || chunk >= length)
        return lm.forward(ids, &cache, /*lastOnly=*/true);
    at::Tensor logits;
    for (int64_t from = 0; from < length; from += chunk) {
        const int64_t count = std::min(chunk, length - from);
        if (lm.rebuildsCacheAt(cache.length(), count)) {
            cache.clear();
            logits = lm.forward(ids.narrow(1, 0, from + count), &cache, true);
        } else {
            logits = lm.forward(ids.narrow(1, from, count), &cache, true);
        }
    }
    return logits;
}

// Refuses a draft that cannot give the model's greedy tokens, naming the setting.
Result<void> checkDraft(InferenceModel &model, InferenceModel &draft, int tokens, const SamplingOptions &options,
                        size_t batch)
{
    const std::string what = "draft model " + draft.modelDir() + ": ";
    if (!(options.greedy || options.temperature <= 0))
        return makeError(ErrorCode::InvalidInput,
                         what + "speculative decoding here is exact greedy decoding; add --greedy (or temperature 0)");
    if (options.repetitionPenalty != 1.0)
        return makeError(ErrorCode::InvalidInput, what + "cannot be used with a repetition penalty (" +
                                                      std::to_string(options.repetitionPenalty) + "); leave it at 1");
    if (batch != 1)
        return makeError(ErrorCode::InvalidInput,
                         what + "decodes one sequence at a time; got a batch of " + std::to_string(batch));
    if (draft.config().vocabSize != model.config().vocabSize)
        return makeError(ErrorCode::InvalidInput, what + "vocab_size " + std::to_string(draft.config().vocabSize) +
                                                      " differs from the model's " +
                                                      std::to_string(model.config().vocabSize) +
                                                      " (the draft must share the model's tokenizer)");
    if (tokens < 1 || tokens > kMaxDraftTokens)
        return makeError(ErrorCode::InvalidInput, "draft tokens: expected 1 to " + std::to_string(kMaxDraftTokens) +
                                                      "; got " + std::to_string(tokens));
    return {};
}

// Greedy speculative decoding of one sequence after its first token: the draft proposes up to
// `draftTokens` tokens one by one, the model computes the logits after each of them in one forward,
// and the longest prefix its argmax agrees with is kept, followed by the model's own token at the
// first disagreement (or after the last proposal). Every kept token is the model's greedy choice, so
// the output equals greedy decoding without a draft (up to the float rounding of a multi-position
// forward). Both caches are cut back to the kept positions. `cache` holds the prompt.
void speculativeDecode(CausalLM &lm, KVCache &cache, CausalLM &draft, int draftTokens,
                       const std::vector<int64_t> &prompt, int64_t first, int maxNewTokens, Emitter &emitter,
                       GenerationResult &result, int64_t &decodedSteps)
{
    KVCache draftCache;
    std::vector<int64_t> draftPending = prompt; // tokens the draft has not seen yet
    std::vector<int64_t> context = prompt;      // every token so far
    context.push_back(first);
    int64_t last = first;
    while (!emitter.allDone()) {
        draftPending.push_back(last);
        const int remaining = maxNewTokens - static_cast<int>(result.sequences[0].tokens.size());
        const int count = std::max(1, std::min(draftTokens, remaining - 1));
        std::vector<int64_t> proposals;
        at::Tensor input = idsTensor(draftPending);
        for (int i = 0; i < count; ++i) {
            const int64_t token = draft.forward(input, &draftCache, true).select(1, 0).argmax(-1).item<int64_t>();
            proposals.push_back(token);
            input = idsTensor({token});
        }
        draftPending.clear();
        std::vector<int64_t> checked{last};
        checked.insert(checked.end(), proposals.begin(), proposals.end());
        at::Tensor logits;
        if (lm.rebuildsCacheAt(cache.length(), static_cast<int64_t>(checked.size()))) {
            // Phi-3's LongRoPE switches factors here: the whole sequence again, as plain decode does.
            std::vector<int64_t> all = context;
            all.insert(all.end(), proposals.begin(), proposals.end());
            cache.clear();
            logits = lm.forward(idsTensor(all), &cache, false)
                         .narrow(1, static_cast<int64_t>(context.size()) - 1, static_cast<int64_t>(checked.size()));
        } else {
            logits = lm.forward(idsTensor(checked), &cache, false);
        }
        const at::Tensor choices = logits.squeeze(0).argmax(-1).to(at::kCPU).contiguous();
        const int64_t *greedy = choices.data_ptr<int64_t>();
        size_t agreed = 0;
        while (agreed < proposals.size() && proposals[agreed] == greedy[agreed])
            ++agreed;
        result.stats.draftProposed += static_cast<int64_t>(proposals.size());
        result.stats.draftAccepted += static_cast<int64_t>(agreed);
        // Kept: every token before `last`, `last` and proposals[0, agreed).
        const int64_t kept = static_cast<int64_t>(context.size()) + static_cast<int64_t>(agreed);
        truncateCache(cache, kept);
        if (draftCache.length() >= kept)
            truncateCache(draftCache, kept);
        else // every proposal kept: the draft has not seen its own last one
            draftPending.push_back(proposals.back());
        for (size_t i = 0; i < agreed && !emitter.allDone(); ++i) {
            emitter.emit(0, proposals[i]);
            context.push_back(proposals[i]);
            ++decodedSteps;
        }
        if (emitter.allDone())
            break;
        last = greedy[agreed];
        emitter.emit(0, last);
        context.push_back(last);
        ++decodedSteps;
    }
}

// generate() over `lm`; `model` (lm's InferenceModel) is needed only with a draft.
Result<GenerationResult> generateWith(CausalLM &lm, InferenceModel *model,
                                      const std::vector<std::vector<int64_t>> &prompts, const SamplingOptions &options,
                                      const TokenCallback &onToken, const Decoder &decoder, const DraftModel &draft)
{
    if (prompts.empty() || prompts.front().empty())
        return makeError(ErrorCode::InvalidInput, "prompt: no input tokens");
    const size_t batch = prompts.size();
    const int64_t promptLength = static_cast<int64_t>(prompts.front().size());
    const ModelConfig &config = lm.config();
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
    if (options.prefillChunk < 0)
        return makeError(ErrorCode::InvalidInput, "prefill chunk: expected 0 (whole prompt) or more; got " +
                                                      std::to_string(options.prefillChunk));
    if (draft.model) {
        if (auto ok = checkDraft(*model, *draft.model, draft.tokens, options, batch); !ok)
            return tl::unexpected(ok.error());
    }

    GenerationResult result;
    result.sequences.resize(batch);
    result.stats.promptTokens = promptLength;
    Emitter emitter(result, options, options.stopTokenIds.empty() ? config.eosTokenIds : options.stopTokenIds, onToken,
                    decoder);
    const bool needRepetitionHistory = options.repetitionPenalty != 1.0;

    try {
        c10::InferenceMode guard;
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
        auto logits = prefill(lm, ids, cache, options.prefillChunk).select(1, 0).to(at::kCPU);
        const double prefillMs = msSince(start);
        result.stats.prefillTokensPerSecond = prefillMs > 0 ? 1000.0 * batch * promptLength / prefillMs : 0;
        Clock::time_point decodeStart;
        int64_t decodedSteps = 0;
        // One sequence, one token a step: small operations on one thread, the products shared
        // (intraopteam.h). A batch's products are GEMMs that keep libtorch's team; a draft's checks
        // are several positions.
        std::optional<OneThreadedOps> decodeThreads;
        if (batch == 1 && !draft.model)
            decodeThreads.emplace();
        for (int step = 0; step < options.maxNewTokens; ++step) {
            auto next = pickTokens(logits, seen, options, generator);
            if (step == 0) {
                result.stats.timeToFirstTokenMs = msSince(start);
                decodeStart = Clock::now();
            }
            auto nextCpu = next.contiguous();
            const int64_t *tokens = nextCpu.data_ptr<int64_t>();
            for (size_t b = 0; b < batch; ++b)
                if (!emitter.done(b))
                    emitter.emit(b, tokens[b]);
            if (emitter.allDone())
                break;
            if (draft.model) { // the first token came from the prefill; the draft proposes the rest
                speculativeDecode(lm, cache, draft.model->lm(), draft.tokens, prompts.front(), tokens[0],
                                  options.maxNewTokens, emitter, result, decodedSteps);
                break;
            }
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
        result.stats.newTokens = 0;
        for (const auto &seq : result.sequences)
            result.stats.newTokens = std::max<int64_t>(result.stats.newTokens, static_cast<int64_t>(seq.tokens.size()));
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

} // namespace

Result<GenerationResult> generate(InferenceModel &model, const std::vector<std::vector<int64_t>> &prompts,
                                  const SamplingOptions &options, const TokenCallback &onToken, const Decoder &decoder,
                                  const DraftModel &draft)
{
    return generateWith(model.lm(), &model, prompts, options, onToken, decoder, draft);
}

Result<GenerationResult> generate(CausalLM &lm, const std::vector<std::vector<int64_t>> &prompts,
                                  const SamplingOptions &options, const TokenCallback &onToken, const Decoder &decoder)
{
    return generateWith(lm, nullptr, prompts, options, onToken, decoder, {});
}

} // namespace accel::inference
