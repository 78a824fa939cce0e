// Text in and out of a model folder: its tokenizer.json through core/tokenizer when present
// (encode; a StreamingDecoder per generated sequence, whose pieces the generator streams and
// matches stop strings on), else ids only.
#pragma once

#include "core/common/result.h"
#include "core/inference/generator.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace accel::inference {

class TextCodec {
public:
    static Result<TextCodec> forModel(const std::string &modelDir);
    bool hasTokenizer() const { return static_cast<bool>(m_impl); }
    std::vector<int64_t> encode(const std::string &text) const;
    // A prompt from outside (a request, --prompt): encodeChecked() with generate()'s limit for this
    // model (promptTokenLimit), so a prompt past it is refused as soon as the tokens pass the limit,
    // before the rest is tokenized (a 60 MB prompt was tokenized whole, 52 M tokens in 13 s and
    // 1.7 GB, before the context check). Errors name the prompt and the limit, or the tokenizer file.
    Result<std::vector<int64_t>> encodePrompt(const std::string &text, const ModelConfig &config,
                                              const SamplingOptions &options) const;
    Decoder decoder() const; // empty without a tokenizer

private:
    struct Impl;
    std::shared_ptr<const Impl> m_impl;
};

} // namespace accel::inference
