// Per-sequence text side: incremental detokenization (complete UTF-8 only; ids the
// tokenizer does not know decode as "") and stop-string matching with hold-back.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace qinfer {
class Tokenizer;
}

namespace qinfer::engine {

class TextOutput {
 public:
  // tokenizer may be null: no text at all (ids only), stop strings then never match.
  TextOutput(const Tokenizer* tokenizer, bool skip_special, const std::vector<std::string>& stop,
             bool include_stop_str);
  ~TextOutput();
  // Adds one token; returns the text now safe to emit. Sets *stopped (and *stop_str)
  // when a stop string completed: the returned text then ends before it (or after it
  // with include_stop_str), and nothing more is to be emitted.
  std::string push(int token, bool* stopped, std::string* stop_str);
  // End of generation: whatever was held back.
  std::string flush();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qinfer::engine
