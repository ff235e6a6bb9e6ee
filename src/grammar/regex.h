// Regular expressions (the Python re / ECMAScript subset that JSON Schema "pattern", vLLM's
// `regex` and GBNF character classes use) to the grammar tree. Supported: literals, `.`,
// classes [...] with ranges and negation, \d \w \s \D \W \S, \n \t \r \f \v \0, \xHH, \uHHHH,
// \u{H..}, escaped punctuation, groups (...), (?:...), (?P<n>...), (?<n>...), alternation,
// * + ? {m} {m,} {m,n} (lazy/possessive suffixes accepted, no effect on the language), and
// ^ / $ at the very start / end (the match is always the whole output). Refused with a
// GrammarError naming the offset: backreferences, lookaround, \b \B, inline flags, anchors
// elsewhere, repeat counts above 1000.
#pragma once
#include <string_view>

#include "grammar/ast.h"

namespace qinfer::grammar {

inline constexpr int kMaxRepeat = 1000;

// json_string: the regex describes a JSON string's *value*; the tree matches its JSON-encoded
// form ('"' -> \", '\' -> \\, control characters -> \n \t \r \b \f \u00XX).
NodePtr parse_regex(std::string_view pattern, bool json_string, std::string_view where);

// One character of a JSON string's content drawn from `r` (encoded as above).
NodePtr json_char(const CodeRanges& r);
// A character class as written in a grammar, in the raw (not JSON) form.
NodePtr char_node(const CodeRanges& r, bool json_string);

// Parses the body of a [...] class starting after '['; `i` ends after ']'. Shared with GBNF.
CodeRanges parse_class(std::string_view s, size_t& i, std::string_view where);
// Parses one escape starting after '\'; returns its code point set.
CodeRanges parse_escape(std::string_view s, size_t& i, std::string_view where, bool in_class);
// Decodes one UTF-8 code point at s[i] (advancing i); GrammarError on bad UTF-8.
uint32_t next_code_point(std::string_view s, size_t& i, std::string_view where);

}  // namespace qinfer::grammar
