// Small string helpers shared by the output parsers, with Python's semantics where the
// parsers being reproduced (vLLM) rely on them: str.isspace / str.strip over UTF-8 text.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qinfer::chat {

// Byte length of the Python-whitespace code point (str.isspace) starting at s[i], or 0.
size_t py_space_len(std::string_view s, size_t i);
// Byte length of the Python-whitespace code point that ends at s[end-1], or 0.
size_t py_space_len_before(std::string_view s, size_t end);

std::string_view py_lstrip(std::string_view s);
std::string_view py_rstrip(std::string_view s);
inline std::string_view py_strip(std::string_view s) { return py_rstrip(py_lstrip(s)); }
inline bool py_isblank(std::string_view s) { return py_lstrip(s).empty(); }

// Bytes at the end of s that begin a UTF-8 sequence the text has not finished yet (a lead
// byte followed by fewer continuation bytes than it announces), 0 when s ends on a code point
// boundary. The streaming parsers hold these back: a piece cut inside a multi-byte character
// must not be judged (e.g. as "not whitespace") differently from the whole character.
size_t incomplete_utf8_tail(std::string_view s);
// Appends delta to held (the bytes held back so far), then moves all but its incomplete tail
// to out: what a streaming parser's push does with each piece.
void append_whole_characters(std::string& held, std::string_view delta, std::string& out);

// Length of the longest proper prefix of tag that is a suffix of text (vLLM partial_tag_overlap).
size_t partial_tag_overlap(std::string_view text, std::string_view tag);

// Position of the first occurrence of needle in hay at or after from, bounded by limit
// (Python's str.find(needle, from, limit)); npos when absent.
size_t find_in(std::string_view hay, std::string_view needle, size_t from = 0,
               size_t limit = std::string_view::npos);

// Value of one hex digit, or -1.
int hex_val(char c);
// The n hex digits at s[i..i+n) as a number; false when there are fewer or one is not hex.
bool read_hex(std::string_view s, size_t i, size_t n, uint32_t& out);

}  // namespace qinfer::chat
