// Fuzz target: tokenizer.json (and the companion tokenizer_config.json / generation_config.json
// readers). An accepted tokenizer encodes a fixed text and a piece of the input, and decodes the
// ids it produced, without a crash; every id it produces is inside its vocabulary.
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizerspec.h"

#include <cstdint>
#include <cstdlib>

using namespace accel::tokenizer;

namespace {

void roundTrip(const Tokenizer &tokenizer, const std::string &text)
{
    const std::vector<int32_t> ids = tokenizer.encode(text, true);
    for (int32_t id : ids) {
        if (id < 0 || static_cast<size_t>(id) >= tokenizer.vocabSize())
            std::abort();
    }
    (void)tokenizer.decode(ids);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string text(reinterpret_cast<const char *>(data), size);
    (void)readTokenizerConfig(text);
    (void)readGenerationConfigEos(text);
    auto tokenizer = Tokenizer::fromJson(text, "fuzz/tokenizer.json");
    if (!tokenizer) {
        if (tokenizer.error().message.empty())
            std::abort();
        return 0;
    }
    roundTrip(*tokenizer, "Hello world, caf\xc3\xa9 123 <s> </s>\n\t  ab");
    roundTrip(*tokenizer, text.substr(0, 64));
    return 0;
}
