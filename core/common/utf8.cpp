#include "core/common/utf8.h"

namespace accel::utf8 {

size_t sequenceLength(unsigned char lead)
{
    if (lead < 0x80)
        return 1;
    if (lead >= 0xC2 && lead <= 0xDF)
        return 2;
    if (lead >= 0xE0 && lead <= 0xEF)
        return 3;
    if (lead >= 0xF0 && lead <= 0xF4)
        return 4;
    return 1;
}

namespace {

// Allowed range of the second byte for a lead byte (the later bytes are always 0x80..0xBF).
void secondByteRange(unsigned char lead, unsigned char &low, unsigned char &high)
{
    low = 0x80;
    high = 0xBF;
    if (lead == 0xE0)
        low = 0xA0;
    else if (lead == 0xED)
        high = 0x9F;
    else if (lead == 0xF0)
        low = 0x90;
    else if (lead == 0xF4)
        high = 0x8F;
}

// Number of bytes from pos that form a valid prefix of a character (the maximal subpart);
// equals the full length when the character is complete and valid.
size_t validPrefix(std::string_view text, size_t pos, size_t &needed)
{
    const auto lead = static_cast<unsigned char>(text[pos]);
    if (lead < 0x80) {
        needed = 1;
        return 1;
    }
    needed = sequenceLength(lead);
    if (needed == 1) {
        needed = 0; // not a lead byte at all
        return 1;
    }
    unsigned char low = 0, high = 0;
    secondByteRange(lead, low, high);
    size_t length = 1;
    while (length < needed && pos + length < text.size()) {
        const auto byte = static_cast<unsigned char>(text[pos + length]);
        if (byte < low || byte > high)
            break;
        low = 0x80;
        high = 0xBF;
        ++length;
    }
    return length;
}

} // namespace

size_t validCharLength(std::string_view text, size_t pos)
{
    size_t needed = 0;
    const size_t length = validPrefix(text, pos, needed);
    return length == needed ? length : 0;
}

bool isValid(std::string_view text)
{
    for (size_t pos = 0; pos < text.size();) {
        const size_t length = validCharLength(text, pos);
        if (length == 0)
            return false;
        pos += length;
    }
    return true;
}

std::string toValid(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        size_t needed = 0;
        const size_t length = validPrefix(text, pos, needed);
        if (length == needed)
            out.append(text.substr(pos, length));
        else
            out.append(kReplacement);
        pos += length;
    }
    return out;
}

std::string encode(uint32_t cp)
{
    std::string out;
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return out;
}

uint32_t decodeAt(std::string_view text, size_t pos, size_t length)
{
    const auto lead = static_cast<unsigned char>(text[pos]);
    if (length == 1)
        return lead;
    uint32_t cp = lead & (0x7F >> length);
    for (size_t i = 1; i < length; ++i)
        cp = (cp << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
    return cp;
}

bool endsWithReplacement(std::string_view text)
{
    return text.size() >= kReplacement.size() && text.substr(text.size() - kReplacement.size()) == kReplacement;
}

} // namespace accel::utf8
