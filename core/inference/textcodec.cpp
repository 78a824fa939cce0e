#include "core/inference/textcodec.h"

#include "core/inference/modelconfig.h"
#include "core/tokenizer/streamingdecoder.h"
#include "core/tokenizer/tokenizer.h"

#include <filesystem>

namespace accel::inference {

struct TextCodec::Impl {
    tokenizer::Tokenizer tokenizer;
};

Result<TextCodec> TextCodec::forModel(const std::string &modelDir)
{
    TextCodec codec;
    if (!std::filesystem::exists(modelDir + "/tokenizer.json"))
        return codec;
    auto loaded = tokenizer::Tokenizer::load(modelDir + "/tokenizer.json");
    if (!loaded)
        return tl::unexpected(loaded.error());
    codec.m_impl = std::make_shared<Impl>(Impl{*loaded});
    return codec;
}

std::vector<int64_t> TextCodec::encode(const std::string &text) const
{
    if (!m_impl)
        return {};
    auto ids = m_impl->tokenizer.encode(text, true);
    return {ids.begin(), ids.end()};
}

Result<std::vector<int64_t>> TextCodec::encodePrompt(const std::string &text, const ModelConfig &config,
                                                     const SamplingOptions &options) const
{
    if (!m_impl)
        return std::vector<int64_t>();
    const size_t limit = promptTokenLimit(config, options);
    auto ids = m_impl->tokenizer.encodeChecked(text, true, limit);
    if (!ids) {
        if (!ids.error().context.empty()) // the tokenizer file's own problem
            return tl::unexpected(ids.error());
        return makeError(ErrorCode::InvalidInput,
                         "prompt: more than " + std::to_string(limit) + " tokens; with max new tokens (" +
                             std::to_string(options.maxNewTokens) + ") it must fit n_positions " +
                             std::to_string(config.maxPositions));
    }
    return std::vector<int64_t>(ids->begin(), ids->end());
}

Decoder TextCodec::decoder() const
{
    if (!m_impl)
        return {};
    // One StreamingDecoder per generated sequence: each token costs a decode of a few ids, not
    // of everything generated so far.
    return Decoder::streaming([impl = m_impl] {
        auto stream = std::make_shared<tokenizer::StreamingDecoder>(impl->tokenizer, /*skipSpecialTokens=*/true);
        return Decoder::Stream{[stream](int64_t id) { return stream->push(static_cast<int32_t>(id)); },
                               [stream] { return stream->finish(); }};
    });
}

} // namespace accel::inference
