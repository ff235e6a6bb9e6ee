// GBNF grammars (llama.cpp's format) to the grammar tree:
//   rule ::= alternatives    (rules may span lines; a new rule starts at `name ::=`)
//   "literal" with \n \t \r \\ \" \xHH \uHHHH escapes, [class] / [^class], `.`, rule names,
//   ( ... ), | , postfix * + ? {m} {m,} {m,n}, # comments. The start rule is `root`.
// Recursive rules are unrolled up to a depth bound (kMaxGbnfDepth expansions of one rule on
// a path); deeper branches are cut, so e.g. JSON nests at most that deep. Errors name the
// rule and the offset.
#pragma once
#include <string_view>

#include "grammar/ast.h"

namespace qinfer::grammar {

inline constexpr int kMaxGbnfDepth = 6;

NodePtr gbnf_grammar(std::string_view text, std::string_view where, int max_depth = kMaxGbnfDepth);

}  // namespace qinfer::grammar
