#include "core/tokenizer/bytelevel.h"

#include "core/common/utf8.h"

#include <array>

namespace accel::tokenizer::bytelevel {

namespace {

struct Tables {
    std::array<std::string, 256> byteToChar;
    std::array<int, 512> codePointToByte{}; // -1 when the code point is not in the alphabet

    Tables()
    {
        codePointToByte.fill(-1);
        auto printable = [](int b) {
            return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        };
        int next = 256;
        for (int b = 0; b < 256; ++b) {
            const int cp = printable(b) ? b : next++;
            byteToChar[static_cast<size_t>(b)] = utf8::encode(static_cast<uint32_t>(cp));
            codePointToByte[static_cast<size_t>(cp)] = b;
        }
    }
};

const Tables &tables()
{
    static const Tables t;
    return t;
}

} // namespace

const std::string &charForByte(unsigned char byte)
{
    return tables().byteToChar[byte];
}

std::string encode(std::string_view bytes)
{
    const Tables &t = tables();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes)
        out += t.byteToChar[static_cast<unsigned char>(c)];
    return out;
}

std::optional<std::string> decode(std::string_view text)
{
    const Tables &t = tables();
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        const size_t length = utf8::validCharLength(text, pos);
        if (length == 0)
            return std::nullopt;
        const uint32_t cp = utf8::decodeAt(text, pos, length);
        if (cp >= t.codePointToByte.size() || t.codePointToByte[cp] < 0)
            return std::nullopt;
        out.push_back(static_cast<char>(t.codePointToByte[cp]));
        pos += length;
    }
    return out;
}

} // namespace accel::tokenizer::bytelevel
