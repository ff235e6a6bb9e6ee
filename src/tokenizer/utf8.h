// UTF-8 helpers for the tokenizer: validation, lossy decoding (invalid bytes become U+FFFD,
// one per maximal ill-formed subpart, like Rust's String::from_utf8_lossy and Python's
// errors="replace"), and finding an incomplete sequence at the end of a buffer so a stream
// decoder can hold it back until the next token completes it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qinfer::tok {

// One step of a UTF-8 reader at some offset.
struct Utf8Step {
  enum Status { kOk, kInvalid, kTruncated } status;
  int len;      // bytes consumed: the sequence (kOk), the maximal ill-formed subpart (kInvalid),
                // or the valid-but-unfinished prefix that runs to the end of the input (kTruncated)
  uint32_t cp;  // the code point when kOk
};

// Reads one sequence starting at s[i] (i < s.size()).
Utf8Step utf8_step(std::string_view s, size_t i);

// Offset of the first byte that is not part of well-formed UTF-8, or nullopt if s is valid.
std::optional<size_t> utf8_first_invalid(std::string_view s);

// Appends s to out with every ill-formed subpart (including a truncated tail) replaced by U+FFFD.
void append_utf8_lossy(std::string& out, std::string_view s);

// Length of the suffix of s that is an unfinished but so far valid UTF-8 sequence, which
// more bytes could complete (0..3).
size_t utf8_incomplete_tail(std::string_view s);

// Appends the UTF-8 encoding of code point cp.
void append_utf8(std::string& out, uint32_t cp);

}  // namespace qinfer::tok
