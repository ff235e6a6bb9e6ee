// Pre-tokeniser of the Qwen2/Qwen3/Qwen3.5 byte-level BPE tokenizers: a hand
// written equivalent of the Split regex in tokenizer.json, with Oniguruma's
// meaning of the classes (as the Hugging Face tokenizers library runs it):
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|
//    ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// \s is Unicode White_Space (so U+0085 is a space and U+FEFF, U+180E are not),
// and (?i:...) folds ASCII letters only.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer::tok {

enum class PretokenizerKind {
  kQwen35,  // letters are [\p{L}\p{M}]+, digits one at a time (Qwen3.5 / Qwen3.6)
  kQwen2,   // letters are \p{L}+, marks count as punctuation (Qwen2 / Qwen3)
};

// Which kind the regex string of tokenizer.json is, or false when it is neither.
bool pretokenizer_kind_from_regex(std::string_view regex, PretokenizerKind* kind);

// Character classes the splitter needs, one bit each.
enum : uint8_t { kClsLetter = 1, kClsMark = 2, kClsNumber = 4, kClsSpace = 8 };
uint8_t char_class(uint32_t cp);

struct Piece {
  uint32_t begin, end;  // byte offsets into the text
};

// Splits well-formed UTF-8 `text` into pieces that cover it exactly, in order.
void pretokenize(std::string_view text, PretokenizerKind kind, std::vector<Piece>& out);

}  // namespace qinfer::tok
