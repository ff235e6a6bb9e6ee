// Weights in anonymous huge-page memory. Matrix-vector decode streams every
// dense weight once per token; from the 4 KiB pages of the mapped checkpoint
// that runs well below the machine's bandwidth (a TLB miss per page, the
// prefetchers stop at page edges), from 2 MiB pages it runs near it.
//
// Load peak: the copies are made layer by layer as the loader goes, into one
// ResidentArena (a reserved anonymous mapping, filled front to back): each
// layer's dense views are copied and their source pages dropped from this
// process (MADV_DONTNEED on the mapping; they stay in the page cache), its
// heap copies (GPTQ repacks, int8 re-encodings) moved in and freed before the
// next layer loads, so resident memory never holds more than the arena plus one
// layer's heap copies. Int8 re-encodings of large matrices (the lm_head) are
// written straight into the arena (WeightReader::arena).
#pragma once
#include <atomic>
#include <cstddef>
#include <memory>

namespace qinfer {
struct TensorInfo;
}

namespace qinfer::model {

struct ModelWeights;
struct LayerWeights;
struct Linear;

// One anonymous mapping (huge pages advised), unmapped on destruction.
class ResidentBlock {
 public:
  explicit ResidentBlock(size_t bytes);   // Error when the mapping fails
  ~ResidentBlock();
  ResidentBlock(const ResidentBlock&) = delete;
  ResidentBlock& operator=(const ResidentBlock&) = delete;
  unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

// A ResidentBlock reserved (MAP_NORESERVE: address space only) at an upper bound
// and handed out front to back, 64-byte aligned; only the pages written become
// resident. Thread-safe.
class ResidentArena {
 public:
  explicit ResidentArena(size_t reserve) : block_(reserve) {}
  unsigned char* alloc(size_t bytes);      // Error when the reservation is exhausted
  bool holds(const void* p) const;
  size_t used() const { return used_.load(); }

 private:
  ResidentBlock block_;
  std::atomic<size_t> used_{0};
};

// Copies the layer's dense views (dropping their source pages) and moves its heap
// copies (int8 re-encodings, packed GPTQ matrices) into the arena; matrices the
// arena already holds are left alone. keep_experts_mapped: dense routed experts
// stay views into the checkpoint (file-backed experts, model/expert_cache.h).
void make_layer_resident(LayerWeights& l, ResidentArena& arena, bool keep_experts_mapped = false);
// The rest of the model: lm_head (unless it borrows the embedding) and the MTP head.
void make_rest_resident(ModelWeights& w, ResidentArena& arena);

// Drops the whole pages inside [p, p + n) of the read-only checkpoint mapping
// from this process's resident set (they stay in the page cache and fault back
// in if read again). Used for tensors already copied or repacked.
void drop_pages(const void* p, size_t n);
// madvise(advice) over the whole pages touching [p, p + n) of the mapping (advice
// only: errors ignored), e.g. MADV_RANDOM / MADV_WILLNEED for file-backed experts.
void advise_pages(const void* p, size_t n, int advice);

}  // namespace qinfer::model
