// The byte-level alphabet of GPT-2 style tokenizers: every byte value is shown as one printable
// Unicode character (printable Latin-1 bytes as themselves, the others from U+0100 upwards), so
// that any byte string becomes a string of vocabulary characters and back.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace accel::tokenizer::bytelevel {

// The UTF-8 text of the character that stands for `byte`.
const std::string &charForByte(unsigned char byte);

// Every byte of `bytes` replaced by its character.
std::string encode(std::string_view bytes);

// The bytes behind a token's characters, or nothing when a character is not in the alphabet.
std::optional<std::string> decode(std::string_view text);

} // namespace accel::tokenizer::bytelevel
