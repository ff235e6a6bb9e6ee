#include "model/arena.h"

#include <algorithm>
#include <cstdint>

namespace qinfer::model {

namespace {
constexpr size_t kAlign = 64;
constexpr size_t kMinBlock = size_t(1) << 20;
}  // namespace

namespace {
size_t start_of(const unsigned char* data, size_t used) {
  if (used > 0) return used;
  // Align the absolute address (new[] only guarantees alignof(max_align_t)).
  const uintptr_t base = reinterpret_cast<uintptr_t>(data);
  return (kAlign - base % kAlign) % kAlign;
}
}  // namespace

void* Arena::alloc_bytes(size_t bytes) {
  bytes = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  if (blocks_.empty() || start_of(blocks_.back().data.get(), blocks_.back().used) + bytes > blocks_.back().size) {
    Block b;
    b.size = std::max(bytes, blocks_.empty() ? kMinBlock : blocks_.back().size * 2) + kAlign;
    b.data.reset(new unsigned char[b.size]);
    blocks_.push_back(std::move(b));
  }
  Block& b = blocks_.back();
  const size_t start = start_of(b.data.get(), b.used);
  b.used = start + bytes;
  return b.data.get() + start;
}

void Arena::reset() {
  if (blocks_.size() > 1) {
    const size_t total = capacity();
    blocks_.clear();
    Block b;
    b.size = total;
    b.data.reset(new unsigned char[total]);
    blocks_.push_back(std::move(b));
  }
  for (auto& b : blocks_) b.used = 0;
}

size_t Arena::capacity() const {
  size_t n = 0;
  for (const auto& b : blocks_) n += b.size;
  return n;
}

}  // namespace qinfer::model
