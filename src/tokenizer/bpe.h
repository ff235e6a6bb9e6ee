// Byte-level BPE merging: a word (the raw bytes of one pre-token) starts as one symbol per
// byte and the adjacent pair with the lowest merge rank is merged until no pair has a rank
// (HF tokenizers' BPE with no dropout, no unk, no byte fallback). Among equal pairs the
// leftmost merges first. Results for short words are cached.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace qinfer::tok {

struct Merge {
  int left, right, merged;  // token ids; the rank is the position in the merge list
};

// Open-addressing hash map from an (left, right) id pair to {rank, merged id}.
class PairTable {
 public:
  struct Value {
    int rank, merged;
  };
  void build(const std::vector<Merge>& merges);
  const Value* find(int left, int right) const {
    const uint64_t key = pack(left, right);
    for (size_t i = hash(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    Value value{};
  };
  static uint64_t pack(int l, int r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  size_t hash(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }
  std::vector<Slot> slots_ = std::vector<Slot>(1);  // one empty slot until build()
  size_t mask_ = 0;
  int shift_ = 63;
};

class BpeModel {
 public:
  // byte_ids[b] is the id of the one-byte token for byte b; merges are in rank order.
  BpeModel(const std::array<int, 256>& byte_ids, const std::vector<Merge>& merges);
  ~BpeModel();

  // Appends the ids of one word (non-empty raw bytes).
  void encode_word(std::string_view word, std::vector<int>& out) const;

 private:
  void merge_word(std::string_view word, std::vector<int>& out) const;

  std::array<int, 256> byte_ids_;
  PairTable pairs_;
  struct Cache;
  std::unique_ptr<Cache> cache_;
};

}  // namespace qinfer::tok
