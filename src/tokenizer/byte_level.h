// The GPT-2 byte-level alphabet used by tokenizer.json vocabularies: every byte maps to one
// printable code point (bytes 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF to themselves, the other 68 in
// increasing order to U+0100, U+0101, ...), so a space is "Ġ" (U+0120) and "\n" is "Ċ" (U+010A).
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace qinfer::tok {

// The code point that stands for byte b.
char32_t byte_to_unicode(unsigned char b);

// Raw bytes of a byte-level string ("Ġhello" -> " hello"), or nullopt if it holds a character
// outside the alphabet or is not valid UTF-8.
std::optional<std::string> byte_level_decode(std::string_view s);

// Same, decoding into out (cleared first); false where byte_level_decode gives nullopt.
bool byte_level_decode_to(std::string_view s, std::string& out);

// The byte-level spelling of raw bytes (" hello" -> "Ġhello").
std::string byte_level_encode(std::string_view bytes);

}  // namespace qinfer::tok
