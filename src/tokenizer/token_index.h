// Open-addressing hash index from a token's raw bytes to its id. The bytes
// live in TokenizerData's arena (token id i is arena[offsets[i], offsets[i+1]));
// the index stores only (hash, id) per slot.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer::tok {

class TokenIndex {
 public:
  // The arena and offsets must outlive the index and not move.
  void bind(const std::string* arena, const std::vector<uint32_t>* offsets) {
    arena_ = arena;
    offsets_ = offsets;
  }
  void reserve(size_t n);
  // Indexes token `id` under its bytes; returns false (changing nothing) when
  // a token with the same bytes is already present, unless `replace` is set.
  bool insert(int id, bool replace = false);
  // Id of the token with these bytes, or -1.
  int find(std::string_view bytes) const;
  size_t size() const { return count_; }

 private:
  struct Slot {
    uint32_t hash;
    int32_t id;  // -1: empty
  };
  static uint32_t hash_of(std::string_view s);
  std::string_view bytes_of(int id) const {
    return std::string_view(*arena_).substr((*offsets_)[id], (*offsets_)[id + 1] - (*offsets_)[id]);
  }
  void grow(size_t capacity);
  const std::string* arena_ = nullptr;
  const std::vector<uint32_t>* offsets_ = nullptr;
  std::vector<Slot> slots_;
  size_t mask_ = 0, count_ = 0;
};

}  // namespace qinfer::tok
