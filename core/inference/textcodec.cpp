#include "core/inference/textcodec.h"

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

Decoder TextCodec::decoder() const
{
    if (!m_impl)
        return {};
    return [impl = m_impl](const std::vector<int64_t> &tokens) {
        std::vector<int32_t> ids(tokens.begin(), tokens.end());
        return impl->tokenizer.decode(ids, true);
    };
}

} // namespace accel::inference
