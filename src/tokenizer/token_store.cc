#include "tokenizer/token_store.h"

#include <functional>

namespace qinfer::tok {

void TokenStore::reserve(size_t tokens, size_t bytes) {
  arena_.reserve(bytes);
  spans_.reserve(tokens);
  size_t cap = slots_.size();
  while (cap < tokens * 2) cap <<= 1;
  if (cap > slots_.size()) rehash(cap);
}

size_t TokenStore::hash_of(std::string_view b) { return std::hash<std::string_view>{}(b); }

size_t TokenStore::slot_of(std::string_view b, size_t hash) const {
  const size_t mask = slots_.size() - 1;
  const uint32_t tag = static_cast<uint32_t>(hash >> 32);
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.id < 0 || (s.tag == tag && bytes(s.id) == b)) return i;
  }
}

void TokenStore::rehash(size_t capacity) {
  slots_.assign(capacity, Slot{0, -1});
  used_ = 0;
  for (int id = 0; id < size(); ++id) {  // ascending, so for equal bytes the highest id wins
    if (spans_[id].present) index(id);
  }
}

void TokenStore::set(int id, std::string_view b) {
  if (!arena_.empty() && b.data() >= arena_.data() && b.data() < arena_.data() + arena_.size()) {
    set(id, std::string(b));  // b would dangle once the arena grows
    return;
  }
  if (id >= size()) spans_.resize(id + 1);
  const bool redefined = spans_[id].present;
  spans_[id] = {static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(b.size()), true};
  arena_.append(b);
  if (redefined) {  // the old bytes must stop finding this id
    rehash(slots_.size());
    return;
  }
  if ((used_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
  index(id);
}

void TokenStore::index(int id) {
  const std::string_view b = bytes(id);
  const size_t h = hash_of(b);
  Slot& s = slots_[slot_of(b, h)];
  if (s.id < 0) ++used_;
  s = {static_cast<uint32_t>(h >> 32), id};
}

std::optional<int> TokenStore::find(std::string_view b) const {
  const int32_t id = slots_[slot_of(b, hash_of(b))].id;
  if (id < 0) return std::nullopt;
  return id;
}

}  // namespace qinfer::tok
