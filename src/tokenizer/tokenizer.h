// Byte-level BPE tokenizer for the Qwen3.5 / Qwen3.6 family (also reads the
// Qwen2/Qwen3 tokenizer.json). Loads tokenizer.json from a model folder, plus
// the extra added tokens that tokenizer_config.json lists in added_tokens_decoder.
//
// encode: added tokens are cut out of the raw text first (leftmost, longest
// match), each remaining span is NFC-normalised, split by the pre-tokeniser
// regex, mapped to bytes and merged by rank. No BOS/EOS is added. Ill-formed
// UTF-8 in the input is replaced by U+FFFD first.
// decode: token bytes are concatenated; ill-formed UTF-8 in the result becomes
// U+FFFD (as Hugging Face's ByteLevel decoder does).
//
// A Tokenizer is cheap to copy (shared, immutable data) and safe to use from
// several threads at once.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer {

namespace tok {
struct TokenizerData;
}

class Tokenizer {
 public:
  // Reads <model_dir>/tokenizer.json (required) and <model_dir>/tokenizer_config.json
  // (optional). Throws qinfer::Error naming the file (and field) on failure.
  static Tokenizer load(const std::string& model_dir);

  // parse_special = true: every added token written in the text becomes its id
  // (Hugging Face default). false: special added tokens (<|im_start|>, ...) are
  // encoded as plain text; non-special ones (<think>, <tool_call>, ...) are
  // still matched, as with Hugging Face's split_special_tokens=True.
  std::vector<int> encode(std::string_view text, bool parse_special = true) const;

  // skip_special drops only tokens marked special; <think>, <tool_call>, ... stay.
  // Ids outside the vocabulary decode to nothing.
  std::string decode(const std::vector<int>& ids, bool skip_special = false) const;

  std::string token_text(int id) const;                      // raw bytes of one token ("" for unknown ids)
  std::optional<int> token_id(std::string_view token) const;  // raw bytes -> id (vocab or added token)
  bool is_special(int id) const;
  bool is_added(int id) const;  // one of the added tokens (special or not)
  int vocab_size() const;       // highest id + 1 (248077 for Qwen3.5)

  const tok::TokenizerData& data() const { return *data_; }

 private:
  std::shared_ptr<const tok::TokenizerData> data_;
};

// Incremental decoding for streaming output: push() returns the text that is
// complete so far, holding back bytes of a UTF-8 character split across
// tokens. The concatenation of all push() results and flush() equals
// tokenizer.decode(all_ids, skip_special). The tokenizer must outlive this object.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false);
  std::string push(int id);
  // Returns held-back bytes (as U+FFFD if they never formed a character) and resets.
  std::string flush();

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace qinfer
