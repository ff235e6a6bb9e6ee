// Python's string escapes, both directions used here: decoding the backslash
// escapes of a (non-raw) string literal, shared by the
// Jinja lexer (template string literals) and the chat module's Python-literal
// parser (tool-call arguments): \\ \' \" \a \b \f \n \r \t \v, backslash-newline
// (dropped), \ooo (1-3 octal digits), \xhh, \uhhhh, \Uhhhhhhhh. Unknown escapes
// stay as written, backslash included, as Python keeps them.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace qinfer {

// Appends the UTF-8 of code point cp (a lone surrogate, which UTF-8 cannot hold,
// becomes U+FFFD): the usual append_cp below.
void append_utf8(std::string& out, uint32_t cp);

enum class EscapeResult { kOk, kTruncated /* \x \u \U without enough hex digits */, kIllegal /* > U+10FFFF */ };

// s[i] is the character after a backslash. Appends the decoded text to `out`
// (code points through `append_cp`, so each caller keeps its own surrogate
// policy) and moves i past the escape. On an error `out` and i are unchanged.
EscapeResult py_decode_escape(std::string_view s, size_t& i, std::string& out,
                              void (*append_cp)(std::string& out, uint32_t cp));

// One byte of UTF-8 text inside a JSON string, as Python's json.dumps writes it
// with ensure_ascii=False: \" \\ \n \r \t \b \f, \u00XX for the other control
// bytes, every other byte (UTF-8 continuation bytes included) as is.
void json_escape_byte(std::string& out, char c);

}  // namespace qinfer
