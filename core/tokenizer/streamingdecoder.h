// Decodes generated ids one at a time: each push returns the text that the new id completed.
// A character whose UTF-8 bytes are spread over several tokens (byte fallback, byte-level BPE) is
// held back until its last byte arrives, so no broken character is ever shown. The pieces add up
// to decode() of all ids, except for byte-fallback runs that are not valid UTF-8: decode() turns
// such a whole run into U+FFFD, the stream only the bytes that never formed a character.
// One decoder per generated sequence, used from one thread.
#pragma once

#include "core/tokenizer/tokenizer.h"

#include <string>
#include <vector>

namespace accel::tokenizer {

class StreamingDecoder {
public:
    explicit StreamingDecoder(Tokenizer tokenizer, bool skipSpecialTokens = true);

    // The text completed by `id` (often empty while a character is incomplete).
    std::string push(int32_t id);
    // Whatever is still held back, with U+FFFD for bytes that never completed; then starts over.
    std::string finish();
    void reset();

private:
    // decode() of the window; drops the context when new byte tokens would join its byte run.
    std::string windowText();
    // Without context: removes the leading byte-fallback tokens whose bytes can never form a
    // character and returns one U+FFFD for each.
    std::string dropDeadBytes();
    std::string emitFrom(const std::string &text);

    Tokenizer m_tokenizer;
    bool m_skipSpecialTokens;
    // The last emitted ids (context, starting at a character boundary) and the ids held back.
    std::vector<int32_t> m_window;
    size_t m_contextSize = 0;  // how many ids at the front of m_window were already emitted
    std::string m_contextText; // decode of the context ids alone
    size_t m_stableSize = 0;   // longest window text before its trailing U+FFFD while holding back
    size_t m_stalled = 0;      // pushes since that text last grew
};

} // namespace accel::tokenizer
