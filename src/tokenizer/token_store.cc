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

size_t TokenStore::slot_of(std::string_view b) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = std::hash<std::string_view>{}(b) & mask;; i = (i + 1) & mask) {
    const int32_t id = slots_[i];
    if (id < 0 || bytes(id) == b) return i;
  }
}

void TokenStore::rehash(size_t capacity) {
  slots_.assign(capacity, -1);
  used_ = 0;
  for (int id = 0; id < size(); ++id) {  // ascending, so for equal bytes the highest id wins
    if (!spans_[id].present) continue;
    const size_t s = slot_of(bytes(id));
    if (slots_[s] < 0) ++used_;
    slots_[s] = id;
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
  const size_t s = slot_of(b);
  if (slots_[s] < 0) ++used_;
  slots_[s] = id;
}

std::optional<int> TokenStore::find(std::string_view b) const {
  const int32_t id = slots_[slot_of(b)];
  if (id < 0) return std::nullopt;
  return id;
}

}  // namespace qinfer::tok
