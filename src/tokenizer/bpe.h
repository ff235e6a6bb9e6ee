// Byte-pair merging by rank. The merge table maps a pair of token ids to the
// pair's rank (its line in the merges list) and the id of the merged token.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace qinfer::tok {

class MergeTable {
 public:
  void reserve(size_t n);
  // Adds a merge; a pair already present keeps its first (lowest) rank.
  void add(int left, int right, int rank, int merged);
  // Rank and merged id of (left, right); false when the pair does not merge.
  bool find(int left, int right, int* rank, int* merged) const {
    const uint64_t key = pack(left, right);
    for (size_t slot = hash(key) & mask_;; slot = (slot + 1) & mask_) {
      const Entry& e = slots_[slot];
      if (e.key == key) {
        *rank = e.rank;
        *merged = e.merged;
        return true;
      }
      if (e.key == kEmpty) return false;
    }
  }
  size_t size() const { return count_; }

 private:
  struct Entry {
    uint64_t key;
    int32_t rank, merged;
  };
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  static uint64_t pack(int l, int r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  static size_t hash(uint64_t k) { return size_t((k * 0x9E3779B97F4A7C15ull) >> 20); }
  void grow(size_t capacity);
  std::vector<Entry> slots_;
  size_t mask_ = 0, count_ = 0;
};

// Encodes one pre-tokenised piece: starts from one token per byte (`byte_ids`)
// and applies the lowest-ranked merge first, leftmost first among equal ranks,
// exactly as Hugging Face's BPE model does. Appends the ids to `out`.
void bpe_encode_word(std::string_view bytes, const std::array<int, 256>& byte_ids,
                     const MergeTable& merges, std::vector<int>& out);

}  // namespace qinfer::tok
