#include "core/tokenizer/streamingdecoder.h"

#include "core/tokenizer/utf8.h"

namespace accel::tokenizer {

namespace {
// A character has at most 4 bytes and every token carries at least one, so a window that still
// ends in U+FFFD after this many held-back ids holds bytes that will never form a character.
constexpr size_t kMaxHeldBack = 6;
constexpr size_t kMaxContext = 4;

bool startsWithReplacement(const std::string &text)
{
    return text.compare(0, utf8::kReplacement.size(), utf8::kReplacement) == 0;
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
    m_contextText = std::move(contextText);
    return out;
}

std::string StreamingDecoder::push(int32_t id)
{
    if (m_tokenizer.tokenText(id).empty() || (m_skipSpecialTokens && m_tokenizer.isSpecial(id)))
        return {};
    m_window.push_back(id);
    const std::string text = m_tokenizer.decode(m_window, m_skipSpecialTokens);
    if (utf8::endsWithReplacement(text) && m_window.size() - m_contextSize < kMaxHeldBack)
        return {};
    return emitFrom(text);
}

std::string StreamingDecoder::finish()
{
    std::string out;
    if (m_window.size() > m_contextSize)
        out = emitFrom(m_tokenizer.decode(m_window, m_skipSpecialTokens));
    reset();
    return out;
}

} // namespace accel::tokenizer
