// Internal tables of a loaded tokenizer (shared by the loader, encoder and decoders).
#pragma once
#include <array>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/token_index.h"

namespace qinfer::tok {

struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct TokenizerData {
  // Raw bytes of token id i are bytes[offsets[i], offsets[i+1]); known[i] is
  // false for ids that no token uses.
  std::string bytes;
  std::vector<uint32_t> offsets;
  std::vector<uint8_t> known;
  std::vector<uint8_t> special;
  std::vector<uint8_t> added;
  TokenIndex ids;  // raw bytes -> id (vocabulary and added tokens)
  std::array<int, 256> byte_ids{};
  MergeTable merges;
  PretokenizerKind kind = PretokenizerKind::kQwen35;
  std::vector<AddedToken> added_tokens;
  AddedTokenMatcher matcher;

  // Cache of encoded pieces (pre-tokens) for repeated words.
  mutable std::mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<int>, StringViewHash, std::equal_to<>> cache;

  std::string_view token_bytes(int id) const {
    return std::string_view(bytes).substr(offsets[id], offsets[id + 1] - offsets[id]);
  }
  int vocab_size() const { return static_cast<int>(known.size()); }
};

}  // namespace qinfer::tok
