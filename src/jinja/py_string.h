// Python str semantics over UTF-8 std::string: code-point indexing, the
// str methods chat templates call (strip, split, find, replace, ...), case
// mapping, and repr() of strings (floats: util/py_format.h). Invalid UTF-8 bytes are kept
// as lone "surrogate escape" code points (U+DC80..U+DCFF) so nothing is lost.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qinfer::jinja::py {

std::u32string decode(const std::string& s);
std::string encode(const std::u32string& s);
std::string encode(char32_t c);
size_t length(const std::string& s);  // number of code points

// Python str.isspace() for one code point.
bool is_space(char32_t c);

// strip/lstrip/rstrip: chars == nullopt strips whitespace, else any code point in chars.
std::string strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right);
// split/rsplit: sep == nullopt splits on runs of whitespace and drops empty parts.
std::vector<std::string> split(const std::string& s, const std::optional<std::string>& sep,
                               int64_t maxsplit);
std::vector<std::string> rsplit(const std::string& s, const std::optional<std::string>& sep,
                                int64_t maxsplit);
std::vector<std::string> splitlines(const std::string& s, bool keepends);
std::string replace(const std::string& s, const std::string& old, const std::string& repl,
                    int64_t count);
// find/rfind/count with optional code-point start/end (Python slice semantics).
int64_t find(const std::string& s, const std::string& sub, std::optional<int64_t> start,
             std::optional<int64_t> end, bool reverse);
int64_t count(const std::string& s, const std::string& sub, std::optional<int64_t> start,
              std::optional<int64_t> end);

std::string upper(const std::string& s);
std::string lower(const std::string& s);
std::string casefold(const std::string& s);  // str.casefold(): full Unicode case folding
std::string capitalize(const std::string& s);
std::string title(const std::string& s);     // Python str.title()
std::string swapcase(const std::string& s);
bool is_lower(const std::string& s);  // str.islower()
bool is_upper(const std::string& s);  // str.isupper()
bool all_chars(const std::string& s, bool (*pred)(char32_t));  // non-empty and all match
bool is_alpha_cp(char32_t c);
bool is_digit_cp(char32_t c);
bool is_alnum_cp(char32_t c);

// Python repr() of a str: quotes chosen like CPython, escapes like CPython.
std::string repr(const std::string& s);

}  // namespace qinfer::jinja::py
