// Internal state shared by Tokenizer, its loader and StreamDecoder.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/token_store.h"
#include "tokenizer/tokenizer.h"

namespace qinfer {

struct Tokenizer::Impl {
  enum Kind : uint8_t { kNone = 0, kVocab = 1, kAdded = 2 };

  tok::TokenStore store;        // raw bytes of every id, and the reverse index
  std::vector<uint8_t> kind;    // per id, same size as store
  std::vector<uint8_t> special; // per id
  std::vector<AddedToken> added;  // sorted by id

  bool nfc = false;
  bool ignore_merges = false;
  std::unique_ptr<tok::RegexSplitter> splitter;  // null: each stretch of text is one word
  std::unique_ptr<tok::AddedTokenMatcher> matcher;
  std::unique_ptr<tok::BpeModel> bpe;
  // The longest token's bytes (vocabulary and added tokens): BPE makes at least
  // ceil(n / max_token_bytes) tokens of n bytes. Set by load once every token is in.
  size_t max_token_bytes = 1;

  bool valid(int id) const { return id >= 0 && id < static_cast<int>(kind.size()) && kind[id] != kNone; }
  void add_token(int id, std::string_view bytes, Kind k, bool is_special);
  // Appends the ids of text that holds no added tokens. With a max_tokens: before the text is
  // split and before each word reaches BPE, when out.size() plus the fewest tokens the bytes
  // left can make (ceil(bytes / max_token_bytes), after NFC) is more than max_tokens, it
  // stops, leaves out as it was and returns that count; otherwise it returns 0.
  // *bpe_bytes (if given) grows by the bytes given to BPE.
  size_t encode_plain(std::string_view text, std::vector<int>& out, size_t max_tokens = SIZE_MAX,
                      size_t* bpe_bytes = nullptr) const;
  // The fewest tokens `bytes` bytes of text can make.
  size_t min_tokens(size_t bytes) const { return (bytes + max_token_bytes - 1) / max_token_bytes; }
  // Appends the bytes of id (skipping special tokens if asked); throws for unknown ids.
  void append_bytes(int id, bool skip_special, std::string& out) const;
};

}  // namespace qinfer
