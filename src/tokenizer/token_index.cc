#include "tokenizer/token_index.h"

namespace qinfer::tok {

uint32_t TokenIndex::hash_of(std::string_view s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, then a final mix
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return static_cast<uint32_t>(h);
}

void TokenIndex::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap > slots_.size()) grow(cap);
}

void TokenIndex::grow(size_t capacity) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{0, -1});
  mask_ = capacity - 1;
  for (const Slot& s : old) {
    if (s.id < 0) continue;
    size_t i = s.hash & mask_;
    while (slots_[i].id >= 0) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

bool TokenIndex::insert(int id, bool replace) {
  if ((count_ + 1) * 2 > slots_.size()) grow(slots_.empty() ? 16 : slots_.size() * 2);
  const std::string_view bytes = bytes_of(id);
  const uint32_t h = hash_of(bytes);
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.id < 0) {
      s = Slot{h, id};
      ++count_;
      return true;
    }
    if (s.hash == h && bytes_of(s.id) == bytes) {
      if (replace) s.id = id;
      return replace;
    }
  }
}

int TokenIndex::find(std::string_view bytes) const {
  if (slots_.empty()) return -1;
  const uint32_t h = hash_of(bytes);
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.hash == h && bytes_of(s.id) == bytes) return s.id;
  }
}

}  // namespace qinfer::tok
