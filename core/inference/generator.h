// Text generation over an InferenceModel: prefill then one token per step with the key/value
// cache; greedy or sampled (temperature, top-k, top-p) with a repetition penalty, a seed, stop
// tokens and stop strings (matched on the decoded text), max new tokens, a streaming callback that
// cancels by returning false, timing (time to first token, prefill and decode tokens/s), and
// greedy speculative decoding with a draft model.
// Runs under c10::InferenceMode. Torch-light header.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace accel::inference {

class CausalLM;
class InferenceModel;
struct ModelConfig;

struct SamplingOptions {
    int maxNewTokens = 32;
    bool greedy = false; // also implied by temperature 0
    double temperature = 1.0;
    int topK = 0;                   // 0: off
    double topP = 1.0;              // 1: off
    double repetitionPenalty = 1.0; // Transformers' rule: positive logits / p, negative × p
    uint64_t seed = 0;
    std::vector<int64_t> stopTokenIds;    // empty: the config's eos_token_id(s)
    std::vector<std::string> stopStrings; // need a decoder
    // Prefill the prompt this many tokens at a time through the cache (0: all at once). Bounds the
    // prefill's activations and attention scores by the chunk instead of the prompt length.
    int prefillChunk = 0;
};

struct GenerationStats {
    int64_t promptTokens = 0; // per sequence
    int64_t newTokens = 0;    // decode steps run (the longest sequence)
    double timeToFirstTokenMs = 0;
    double prefillTokensPerSecond = 0; // batch × prompt tokens / prefill time
    double decodeTokensPerSecond = 0;  // batch × tokens / decode time, after the first token
    double totalMs = 0;
    int64_t draftProposed = 0; // speculative decoding: tokens the draft proposed
    int64_t draftAccepted = 0; // of them, the ones the model's greedy choice agreed with
};

// Speculative decoding (DraftModel::model set): a small model of the same vocabulary proposes
// `tokens` tokens at a time and the model checks them in one forward. Greedy only (the tokens equal
// greedy decoding without a draft), one sequence, no repetition penalty: anything else is refused.
constexpr int kMaxDraftTokens = 64;
struct DraftModel {
    InferenceModel *model = nullptr;
    int tokens = 4; // proposals per step, 1..kMaxDraftTokens
};

struct GeneratedSequence {
    std::vector<int64_t> tokens; // new tokens (a matched stop token is included)
    std::string text;            // decoded new text, cut before a stop string (empty without decoder)
    std::string stopReason;      // "length", "stop_token", "stop_string", "cancelled"
};

struct GenerationResult {
    std::vector<GeneratedSequence> sequences;
    GenerationStats stats;
    bool cancelled = false;
};

// Called for each new token: (sequence, token, newly decoded text). Return false to cancel.
using TokenCallback = std::function<bool(size_t sequence, int64_t token, const std::string &textPiece)>;
// Turns generated ids into text (a tokenizer); optional. Either incremental, one stream per
// sequence (push(id) returns the text that id completed, finish() what is still held back: a
// tokenizer's StreamingDecoder, constant work per token), or a function of all the new ids that
// the generator calls again after every token (simple, but quadratic in the length).
struct Decoder {
    using Full = std::function<std::string(const std::vector<int64_t> &tokens)>;
    struct Stream {
        std::function<std::string(int64_t id)> push;
        std::function<std::string()> finish;
    };
    using StreamFactory = std::function<Stream()>;

    Decoder() = default;
    template <typename F,
              typename = std::enable_if_t<std::is_invocable_r_v<std::string, F, const std::vector<int64_t> &>>>
    Decoder(F decodeAll) : full(std::move(decodeAll))
    {}
    static Decoder streaming(StreamFactory makeStream)
    {
        Decoder d;
        d.makeStream = std::move(makeStream);
        return d;
    }
    explicit operator bool() const { return static_cast<bool>(full) || static_cast<bool>(makeStream); }

    Full full;
    StreamFactory makeStream;
};

// The most prompt tokens generate() takes for this model and options: GPT-2's learned positions
// hold the prompt and the new tokens (n_positions - max new tokens, 0 when those alone are too
// many); rotary families have no such limit (SIZE_MAX).
size_t promptTokenLimit(const ModelConfig &config, const SamplingOptions &options);

// All prompts must have the same length (no padding in this version).
Result<GenerationResult> generate(InferenceModel &model, const std::vector<std::vector<int64_t>> &prompts,
                                  const SamplingOptions &options, const TokenCallback &onToken = {},
                                  const Decoder &decoder = {}, const DraftModel &draft = {});
// The same over a CausalLM that is not a loaded InferenceModel (the last stage of a pipeline, whose
// forward runs the earlier layers on other processes); no draft.
Result<GenerationResult> generate(CausalLM &lm, const std::vector<std::vector<int64_t>> &prompts,
                                  const SamplingOptions &options, const TokenCallback &onToken = {},
                                  const Decoder &decoder = {});

} // namespace accel::inference
