#include "core/tokenizer/streamingdecoder.h"

#include "core/common/utf8.h"

#include <algorithm>
#include <cstdlib>

namespace accel::tokenizer {

namespace {
// A character has at most 4 bytes and every token carries at least one, so a window whose text
// still ends in U+FFFD, without growing, after this many ids holds bytes that will never form one.
constexpr size_t kMaxHeldBack = 6;
constexpr size_t kMaxContext = 4;

bool startsWithReplacement(const std::string &text)
{
    return text.compare(0, utf8::kReplacement.size(), utf8::kReplacement) == 0;
}

// The byte of a byte-fallback token ("<0xE6>"), or -1.
int fallbackByte(const std::string &token)
{
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>')
        return -1;
    const std::string digits = token.substr(3, 2); // strtol's end pointer points into it
    char *end = nullptr;
    const long value = std::strtol(digits.c_str(), &end, 16);
    return end == digits.c_str() + digits.size() ? static_cast<int>(value) : -1;
}

// Whether `bytes` start with a byte that can never begin a character, whatever follows: a
// continuation or invalid lead byte, or a lead byte followed by a byte that does not continue it.
bool startsDead(const std::string &bytes)
{
    const unsigned char lead = static_cast<unsigned char>(bytes[0]);
    const size_t length = utf8::sequenceLength(lead);
    if (lead < 0x80)
        return false;
    if (length == 1)
        return true;
    for (size_t k = 1; k < length && k < bytes.size(); ++k)
        if ((static_cast<unsigned char>(bytes[k]) & 0xC0) != 0x80)
            return true;
    return bytes.size() >= length && utf8::validCharLength(bytes, 0) == 0;
}
} // namespace

StreamingDecoder::StreamingDecoder(Tokenizer tokenizer, bool skipSpecialTokens)
    : m_tokenizer(std::move(tokenizer)), m_skipSpecialTokens(skipSpecialTokens)
{}

void StreamingDecoder::reset()
{
    m_window.clear();
    m_contextSize = 0;
    m_contextText.clear();
    m_stableSize = 0;
    m_stalled = 0;
}

std::string StreamingDecoder::emitFrom(const std::string &text)
{
    size_t common = 0;
    while (common < text.size() && common < m_contextText.size() && text[common] == m_contextText[common])
        ++common;
    std::string out = text.substr(common);
    // The newest ids become the context for the next push: it keeps the decoders' "start of
    // text" rules (stripping the leading space) from firing again. It must begin at a character
    // boundary, or a byte-fallback run would join the stray continuation bytes with new ones.
    size_t start = m_window.size() - 1;
    std::vector<int32_t> context(m_window.begin() + static_cast<std::ptrdiff_t>(start), m_window.end());
    std::string contextText = m_tokenizer.decode(context, m_skipSpecialTokens);
    while (startsWithReplacement(contextText) && start > 0 && m_window.size() - start < kMaxContext) {
        --start;
        context.assign(m_window.begin() + static_cast<std::ptrdiff_t>(start), m_window.end());
        contextText = m_tokenizer.decode(context, m_skipSpecialTokens);
    }
    m_window = std::move(context);
    m_contextSize = m_window.size();
    m_stableSize = 0;
    m_stalled = 0;
    m_contextText = std::move(contextText);
    return out;
}

std::string StreamingDecoder::windowText()
{
    std::string text = m_tokenizer.decode(m_window, m_skipSpecialTokens);
    if (m_contextSize == 0 || m_contextSize >= m_window.size() ||
        text.compare(0, m_contextText.size(), m_contextText) == 0 ||
        fallbackByte(m_tokenizer.tokenText(m_window[m_contextSize])) < 0)
        return text;
    // The new byte tokens joined the context's byte-fallback run, and the run as a whole decodes
    // differently (an invalid run becomes one U+FFFD per byte, the character already shown
    // included). The context ends at a character boundary and the new ids start with a byte
    // token, so they are decoded on their own: a bad byte shows as one U+FFFD.
    m_window.erase(m_window.begin(), m_window.begin() + static_cast<std::ptrdiff_t>(m_contextSize));
    m_contextSize = 0;
    m_contextText.clear();
    m_stableSize = 0;
    return m_tokenizer.decode(m_window, m_skipSpecialTokens);
}

std::string StreamingDecoder::dropDeadBytes()
{
    // The held ids after the context; not when the context ends in a byte token, whose run the held
    // bytes would join (windowText() dropped such a context when it mattered).
    if (m_contextSize > 0 && fallbackByte(m_tokenizer.tokenText(m_window[m_contextSize - 1])) >= 0)
        return {};
    std::string dead;
    while (m_window.size() > m_contextSize) {
        std::string bytes;
        for (size_t i = m_contextSize; i < m_window.size(); ++i) {
            const int byte = fallbackByte(m_tokenizer.tokenText(m_window[i]));
            if (byte < 0)
                break;
            bytes += static_cast<char>(byte);
        }
        if (bytes.empty() || !startsDead(bytes))
            break;
        dead += utf8::kReplacement;
        m_window.erase(m_window.begin() + static_cast<std::ptrdiff_t>(m_contextSize));
    }
    return dead;
}

std::string StreamingDecoder::push(int32_t id)
{
    if (m_tokenizer.tokenText(id).empty() || (m_skipSpecialTokens && m_tokenizer.isSpecial(id)))
        return {};
    m_window.push_back(id);
    std::string text = windowText();
    const std::string dead = dropDeadBytes();
    if (!dead.empty()) {
        if (m_window.size() == m_contextSize)
            return dead;
        text = m_tokenizer.decode(m_window, m_skipSpecialTokens);
    }
    if (utf8::endsWithReplacement(text)) {
        // Held back while the character may still complete. Byte-level tokens can end one character
        // and start the next, so the text may keep ending incomplete while it grows: only ids that
        // add nothing before the trailing U+FFFD count towards giving up.
        size_t stable = text.size();
        while (stable >= utf8::kReplacement.size() &&
               text.compare(stable - utf8::kReplacement.size(), utf8::kReplacement.size(), utf8::kReplacement) == 0)
            stable -= utf8::kReplacement.size();
        m_stalled = stable > m_stableSize ? 0 : m_stalled + 1;
        m_stableSize = std::max(m_stableSize, stable);
        if (m_stalled < kMaxHeldBack)
            return dead;
    }
    return dead + emitFrom(text);
}

std::string StreamingDecoder::finish()
{
    std::string out;
    if (m_window.size() > m_contextSize) {
        std::string text = windowText();
        out = dropDeadBytes();
        if (m_window.size() > m_contextSize)
            out += emitFrom(out.empty() ? text : m_tokenizer.decode(m_window, m_skipSpecialTokens));
    }
    reset();
    return out;
}

} // namespace accel::tokenizer
