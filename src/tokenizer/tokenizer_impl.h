// Internal state shared by Tokenizer, its loader and StreamDecoder.
#pragma once
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

  bool valid(int id) const { return id >= 0 && id < static_cast<int>(kind.size()) && kind[id] != kNone; }
  void add_token(int id, std::string_view bytes, Kind k, bool is_special);
  // Appends the ids of text that holds no added tokens.
  void encode_plain(std::string_view text, std::vector<int>& out) const;
  // Appends the bytes of id (skipping special tokens if asked); throws for unknown ids.
  void append_bytes(int id, bool skip_special, std::string& out) const;
};

}  // namespace qinfer
