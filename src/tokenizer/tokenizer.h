// Byte-level BPE tokenizer loaded from a Hugging Face model folder (tokenizer.json, plus the
// added tokens of tokenizer_config.json's added_tokens_decoder that tokenizer.json lacks; for
// Qwen3.5/3.6 those are the 7 audio/TTS tokens 248070..248076).
//
// encode(text): added tokens are cut out first (leftmost, then longest match; matched on the
// raw text), every other stretch is NFC-normalised, split by the pre-tokenizer regex, mapped to
// bytes and merged by BPE rank. No BOS/EOS is added. With parse_special = false only tokens
// flagged special (<|im_start|>, ...) are left as plain text; non-special added tokens
// (<think>, <tool_call>, ...) are still matched, like HF's split_special_tokens=True.
// Input must be valid UTF-8 (qinfer::Error otherwise).
//
// decode(ids): token bytes are concatenated and ill-formed UTF-8 is replaced by U+FFFD (as
// HF's ByteLevel decoder does); skip_special drops only tokens flagged special, so <think> and
// <tool_call> stay. Ids that are not tokens (negative, >= vocab_size(), e.g. the padded
// embedding rows 248077..248319 of Qwen3.5) throw qinfer::Error.
//
// A Tokenizer is cheap to copy (shared, immutable state) and safe to use from many threads.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer {

struct AddedToken {
  int id;
  std::string content;
  bool special;
};

class Tokenizer {
 public:
  // Reads <model_dir>/tokenizer.json (required) and <model_dir>/tokenizer_config.json
  // (optional). Errors name the file and, where it applies, the field.
  static Tokenizer load(const std::string& model_dir);

  std::vector<int> encode(std::string_view text, bool parse_special = true) const;
  // encode() that stops early: once the text certainly makes more than max_tokens tokens it
  // stops without encoding the rest, so an over-long prompt costs about max_tokens tokens of
  // work, not its whole length. It stops when more than max_tokens tokens are made, or before
  // BPE when too many bytes are left: BPE makes at least ceil(bytes / L) tokens of a word, L
  // being the longest token's byte length (vocabulary and added tokens), so a stretch of text
  // longer than (max_tokens + 1) * L bytes (NFC-normalised) is over the limit, cut or not.
  // Stretches between added tokens are encoded in pieces of about piece_bytes, cut only before
  // a space that follows an ASCII non-space and precedes an ASCII letter, or after a newline
  // followed by a character that is not whitespace: there the pre-tokenizer (Qwen, GPT-2 and
  // Llama-3 patterns) always starts a new word and NFC cannot join the two sides, so the
  // tokens are exactly encode()'s. A piece with no such cut (one long CJK or repeated-letter
  // word) is still bounded: its words reach BPE only while the bytes left can fit.
  struct Bounded {
    std::vector<int> ids;   // encode(text.substr(0, bytes_read))
    size_t bytes_read = 0;  // text.size() when all of it was encoded
    // encode(text).size() when all was encoded; otherwise a lower bound of it, > max_tokens.
    size_t tokens = 0;
    size_t bpe_bytes = 0;   // bytes given to BPE (the work done; encode() gives it all of text)
    bool complete = false;  // all of text was encoded: tokens == ids.size()
  };
  Bounded encode_bounded(std::string_view text, bool parse_special, size_t max_tokens,
                         size_t piece_bytes = size_t{1} << 16) const;
  // The longest token's byte length (vocabulary and added tokens, raw bytes).
  size_t max_token_bytes() const;
  std::string decode(const std::vector<int>& ids, bool skip_special = false) const;

  std::string token_text(int id) const;                       // raw bytes ("" for unknown ids)
  std::optional<int> token_id(std::string_view token) const;  // by raw bytes, vocab or added token
  bool is_special(int id) const;                              // false for unknown ids
  int vocab_size() const;                                     // highest id + 1 (248077 for Qwen3.5)
  const std::vector<AddedToken>& added_tokens() const;        // sorted by id

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
  friend class StreamDecoder;
};

// Incremental decoding for streaming output: push() returns the text that is complete so far,
// holding back a UTF-8 sequence that a later token may finish; flush() returns what is left
// (an unfinished sequence becomes U+FFFD). The concatenation of all push() results and flush()
// equals decode(ids, skip_special) for the same ids. push() throws like decode() for bad ids.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false);
  std::string push(int id);
  std::string flush();

 private:
  std::shared_ptr<const Tokenizer::Impl> impl_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace qinfer
