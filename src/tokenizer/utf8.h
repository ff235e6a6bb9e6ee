// UTF-8 helpers for the tokenizer: decoding, lossy repair (ill-formed bytes
// become U+FFFD exactly as Rust's String::from_utf8_lossy does, one U+FFFD per
// maximal ill-formed subpart).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qinfer::tok {

// Length of the well-formed UTF-8 sequence that starts at s[i], or 0 when the
// bytes there are ill-formed. `*needed` (if given) receives how many bytes a
// well-formed sequence with this lead byte has, and `*valid_prefix` how many
// leading bytes are a valid prefix of one (at least 1). A sequence cut short by
// the end of `s` returns 0 with valid_prefix == s.size() - i.
size_t utf8_sequence_length(std::string_view s, size_t i, size_t* valid_prefix = nullptr);

// Decodes the well-formed sequence of length `len` at s[i] (len from above).
uint32_t utf8_decode(std::string_view s, size_t i, size_t len);

// Appends the UTF-8 encoding of code point `cp` to `out`.
void utf8_append(std::string& out, uint32_t cp);

// True when `s` is well-formed UTF-8.
bool utf8_is_valid(std::string_view s);

// Appends `s` to `out`, replacing each maximal ill-formed subpart by U+FFFD.
// When `hold_incomplete` is true, a trailing sequence that is cut short but
// could still be completed is not written; its length is returned so a
// streaming caller can keep those bytes. Otherwise it is replaced and 0 is returned.
size_t utf8_append_lossy(std::string& out, std::string_view s, bool hold_incomplete);

}  // namespace qinfer::tok
