// Scratch memory for the forward pass: a bump allocator whose blocks are kept
// between calls, so the per-layer activation buffers (megabytes at prefill) are
// neither re-allocated nor zero-filled every layer. Memory is uninitialised.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

namespace qinfer::model {

class Arena {
 public:
  // n elements of T, 64-byte aligned, valid until the next reset().
  template <typename T>
  T* alloc(size_t n) {
    return static_cast<T*>(alloc_bytes(n * sizeof(T)));
  }
  // Forgets every allocation; when the last round needed several blocks they are
  // merged into one block large enough for all of them.
  void reset();
  size_t capacity() const;

 private:
  void* alloc_bytes(size_t bytes);
  struct Block {
    std::unique_ptr<unsigned char[]> data;
    size_t size = 0, used = 0;
  };
  std::vector<Block> blocks_;
};

}  // namespace qinfer::model
