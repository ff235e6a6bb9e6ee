// The Split pre-tokenizer of tokenizer.json (behaviour Isolated): the text is cut into the
// regex matches and the stretches between them, in order. The pattern is written for
// Oniguruma (what HF tokenizers uses); it is compiled with PCRE2 (UTF + UCP + JIT) after two
// rewrites that make PCRE2 agree with Oniguruma:
//   - \s / \S become the exact Unicode White_Space set (PCRE2's UCP \s lacks U+0085);
//   - letters inside (?i: ... ) become [xX] pairs (ASCII-only case folding, so "'ſ" is not
//     the contraction "'s"; HF tokenizers.js and llama.cpp behave this way).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer::tok {

// Rewrites an Oniguruma pattern as described above (exposed for tests).
std::string translate_pattern(std::string_view onig);

class RegexSplitter {
 public:
  // Throws qinfer::Error naming `where` if the pattern does not compile.
  RegexSplitter(std::string_view onig_pattern, const std::string& where);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Appends the pieces of text (valid UTF-8) to out; they cover text exactly, in order.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qinfer::tok
