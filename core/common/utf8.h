// UTF-8 helpers (the tokenizer, the config reader): splitting into characters, lossy repair of invalid byte
// sequences (one U+FFFD per maximal invalid subpart, as Hugging Face's decoders produce) and
// encoding code points.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace accel::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD

// Length in bytes of the character that starts with `lead` (1 for bytes that cannot start one).
size_t sequenceLength(unsigned char lead);

// Length of the valid character at text[pos], or 0 when the bytes there are not valid UTF-8.
size_t validCharLength(std::string_view text, size_t pos);

bool isValid(std::string_view text);

// `text` with every invalid or truncated sequence replaced by U+FFFD.
std::string toValid(std::string_view text);

std::string encode(uint32_t codePoint);

// The code point of the valid character at text[pos] (call validCharLength first).
uint32_t decodeAt(std::string_view text, size_t pos, size_t length);

bool endsWithReplacement(std::string_view text);

} // namespace accel::utf8
