// Fuzz target: the tokenizer's text stages, normalizers and pre-tokenizers, chosen and configured
// by the input (fuzz_tokenizer mutates whole tokenizer.json files and rarely gets past the model;
// here every input is a valid file around a fixed byte-level vocabulary). The bytes read: how many
// normalizers and pre-tokenizers, then per step its kind, flags and strings (a length byte, then
// that many bytes), and the rest is the text to encode. Patterns come from a menu of published and
// backtracking ones, or from the input. An accepted tokenizer must encode the text within its
// limits (encodeChecked refuses with a message or gives ids inside the vocabulary) and decode them.
#include "core/tokenizer/bytelevel.h"
#include "core/tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace accel::tokenizer;
using json = nlohmann::json;

namespace {

class Reader {
public:
    Reader(const uint8_t *data, size_t size) : m_data(data), m_size(size) {}
    uint8_t byte() { return m_pos < m_size ? m_data[m_pos++] : 0; }
    std::string text()
    {
        // The length byte first: read inside std::min's arguments, the remaining size could be
        // taken before the byte that shortens it (the order is unspecified), one byte past the end.
        const size_t wanted = byte() % 16;
        const size_t length = std::min<size_t>(wanted, m_size - m_pos);
        std::string out(reinterpret_cast<const char *>(m_data + m_pos), length);
        m_pos += length;
        return out;
    }
    std::string rest()
    {
        const size_t length = std::min<size_t>(m_size - m_pos, 4096);
        return std::string(reinterpret_cast<const char *>(m_data + m_pos), length);
    }

private:
    const uint8_t *m_data;
    size_t m_size;
    size_t m_pos = 0;
};

std::string pattern(Reader &in)
{
    static const char *const menu[] = {
        R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
        R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
        R"(\s+)",
        R"( {2,})",
        R"(.{0,30}.{0,30}.{0,30}Q|.)",
        R"((a|aa)+b)",
        R"(\s*[\r\n]+|.)",
        R"(\p{N})",
        R"(x*)",
    };
    const uint8_t choice = in.byte();
    if (choice < sizeof(menu) / sizeof(menu[0]))
        return menu[choice];
    return in.text();
}

json normalizer(Reader &in)
{
    switch (in.byte() % 3) {
    case 0:
        return {{"type", "Prepend"}, {"prepend", in.text()}};
    case 1:
        return {{"type", "Replace"}, {"pattern", {{"String", in.text()}}}, {"content", in.text()}};
    default:
        return {{"type", "Replace"}, {"pattern", {{"Regex", pattern(in)}}}, {"content", in.text()}};
    }
}

json preTokenizer(Reader &in)
{
    static const char *const behaviors[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                            "Contiguous"};
    static const char *const schemes[] = {"always", "first", "never"};
    const uint8_t kind = in.byte();
    const uint8_t flags = in.byte();
    switch (kind % 7) {
    case 0:
        return {{"type", "ByteLevel"}, {"add_prefix_space", (flags & 1) != 0}, {"use_regex", (flags & 2) != 0}};
    case 1: {
        json split = {{"type", "Split"}, {"behavior", behaviors[flags % 5]}, {"invert", (flags & 8) != 0}};
        if (flags & 16)
            split["pattern"] = {{"String", in.text()}};
        else
            split["pattern"] = {{"Regex", pattern(in)}};
        return split;
    }
    case 2: {
        std::string replacement = in.text();
        return {{"type", "Metaspace"},
                {"replacement", replacement.empty() ? std::string("\xE2\x96\x81") : replacement},
                {"prepend_scheme", schemes[flags % 3]},
                {"split", (flags & 4) != 0}};
    }
    case 3:
        return {{"type", "Whitespace"}};
    case 4:
        return {{"type", "WhitespaceSplit"}};
    case 5:
        return {{"type", "Digits"}, {"individual_digits", (flags & 1) != 0}};
    default:
        return {{"type", "Punctuation"}, {"behavior", behaviors[flags % 5]}};
    }
}

// The model part: the 256 byte-level characters (id = byte), "▁" and an unknown token.
const json &model()
{
    static const json value = [] {
        json vocab = json::object();
        for (int b = 0; b < 256; ++b)
            vocab[bytelevel::charForByte(static_cast<unsigned char>(b))] = b;
        vocab["\xE2\x96\x81"] = 256;
        vocab["<unk>"] = 257;
        return json{{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"unk_token", "<unk>"}};
    }();
    return value;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Reader in(data, size);
    const int normalizers = in.byte() % 5;
    const int preTokenizers = in.byte() % 4;
    json document = {{"version", "1.0"}, {"model", model()}};
    json steps = json::array();
    for (int i = 0; i < normalizers; ++i)
        steps.push_back(normalizer(in));
    if (!steps.empty())
        document["normalizer"] = {{"type", "Sequence"}, {"normalizers", steps}};
    steps = json::array();
    for (int i = 0; i < preTokenizers; ++i)
        steps.push_back(preTokenizer(in));
    if (!steps.empty())
        document["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", steps}};
    const std::string text = in.rest();
    auto tokenizer = Tokenizer::fromJson(document.dump(-1, ' ', false, json::error_handler_t::replace), "fuzz.json");
    if (!tokenizer) {
        if (tokenizer.error().message.empty())
            std::abort();
        return 0;
    }
    auto ids = tokenizer->encodeChecked(text, true, 1 << 14);
    if (!ids) {
        if (ids.error().message.empty())
            std::abort();
        return 0;
    }
    for (int32_t id : *ids)
        if (id < 0 || static_cast<size_t>(id) >= tokenizer->vocabSize())
            std::abort();
    (void)tokenizer->decode(*ids);
    return 0;
}
