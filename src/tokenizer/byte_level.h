// GPT-2 byte-level alphabet: every byte has a printable stand-in character
// (bytes 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF stand for themselves; the other 68
// bytes map, in increasing order, to U+0100, U+0101, ...). Vocabulary and
// merges in tokenizer.json are written in this alphabet.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace qinfer::tok {

// The stand-in code point of byte b.
uint32_t byte_to_unicode(uint8_t b);

// Converts a token written in the byte-level alphabet back to its raw bytes.
// Returns false when `s` is not well-formed UTF-8 or holds a character outside the alphabet.
bool byte_level_decode(std::string_view s, std::string& out);

// Writes raw bytes in the byte-level alphabet.
std::string byte_level_encode(std::string_view bytes);

}  // namespace qinfer::tok
