// Bench buffers in transparent huge pages, as the model keeps its weights and KV
// cache (model/resident.h, model/sequence_state.h): 4 KiB pages cost a matvec a
// third of its bandwidth and decode attention ~7% at 32k keys.
#pragma once
#include <sys/mman.h>

#include <cstdlib>
#include <memory>
#include <new>

namespace qinfer::bench {

constexpr size_t kHugePage = size_t{2} << 20;

struct FreeHuge {
  void operator()(void* p) const { std::free(p); }
};

// At least `bytes`, 2 MiB aligned and advised into huge pages (advice only: ignored
// where THP is off); throws std::bad_alloc.
template <class T>
std::unique_ptr<T, FreeHuge> huge_alloc(size_t bytes) {
  const size_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, size);
  if (!p) throw std::bad_alloc();
  madvise(p, size, MADV_HUGEPAGE);
  return std::unique_ptr<T, FreeHuge>(static_cast<T*>(p));
}

}  // namespace qinfer::bench
