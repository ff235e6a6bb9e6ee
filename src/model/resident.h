// Weights in anonymous huge-page memory. Matrix-vector decode streams every
// dense weight once per token; from the 4 KiB pages of the mapped checkpoint
// that runs well below the machine's bandwidth (a TLB miss per page, the
// prefetchers stop at page edges), from 2 MiB pages it runs near it. The copy
// replaces the mapping in the process's memory: the source pages are dropped
// (MADV_DONTNEED) after copying, so resident memory stays one copy of the weights.
// The packed GPTQ experts (heap vectors, 4 KiB pages) move into the same block.
#pragma once
#include <cstddef>
#include <memory>

namespace qinfer::model {

struct ModelWeights;

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

// Copies every dense matrix (checkpoint views and int8 re-encodings, whose heap
// copies are freed; not an lm_head that borrows the embedding) and moves every
// packed GPTQ matrix (the experts) into one ResidentBlock owned by `w`.
void make_resident(ModelWeights& w);

// Drops the whole pages inside [p, p + n) of the read-only checkpoint mapping
// from this process's resident set (they stay in the page cache and fault back
// in if read again). Used for tensors already copied or repacked.
void drop_pages(const void* p, size_t n);

}  // namespace qinfer::model
