#include "model/resident.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

#include "model/weights.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace qinfer::model {

namespace {
constexpr size_t kHuge = size_t{2} << 20;
constexpr size_t kAlign = 64;

size_t round_up(size_t a, size_t b) { return (a + b - 1) / b * b; }

size_t page_size() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

struct Found {
  std::vector<Linear*> dense;            // dense matrices to copy
  std::vector<ops::GptqMatrix*> gptq;    // packed GPTQ matrices to move
};

void collect(Linear& l, Found& out) {
  if (l.empty()) return;
  if (l.gptq) out.gptq.push_back(l.gptq.get());
  else if (l.dense.weights()) out.dense.push_back(&l);
}

void collect_layer(LayerWeights& l, Found& out, bool experts) {
  for (Linear* x : {&l.delta.in_qkv, &l.delta.in_z, &l.delta.in_b, &l.delta.in_a, &l.delta.out, &l.attn.q, &l.attn.k,
                    &l.attn.v, &l.attn.o, &l.moe.router, &l.moe.shared_gate, &l.moe.shared_up, &l.moe.shared_down,
                    &l.moe.shared_expert_gate})
    collect(*x, out);
  for (Expert& e : l.moe.experts)
    for (Linear* x : {&e.gate_up, &e.gate, &e.up, &e.down})
      if (experts || x->gptq || !x->dense.owned.empty()) collect(*x, out);   // mapped: only views stay
}

}  // namespace

void drop_pages(const void* p, size_t n) {
  const size_t page = page_size();
  const uintptr_t a = round_up(reinterpret_cast<uintptr_t>(p), page);
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (b > a) madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
}

void advise_pages(const void* p, size_t n, int advice) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p) / page_size() * page_size();
  const uintptr_t b = reinterpret_cast<uintptr_t>(p) + n;
  if (b > a) madvise(reinterpret_cast<void*>(a), b - a, advice);
}

ResidentBlock::ResidentBlock(size_t bytes) : size_(round_up(bytes == 0 ? 1 : bytes, kHuge)) {
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) fail("cannot reserve ", size_, " bytes of address space for the weights: ", std::strerror(errno));
  madvise(p, size_, MADV_HUGEPAGE);   // advice only; ignored where THP is off
  data_ = static_cast<unsigned char*>(p);
}

ResidentBlock::~ResidentBlock() {
  if (data_) munmap(data_, size_);
}

unsigned char* ResidentArena::alloc(size_t bytes) {
  const size_t n = round_up(bytes == 0 ? 1 : bytes, kAlign);
  const size_t at = used_.fetch_add(n);
  if (at + n > block_.size())
    fail("resident weights: the ", block_.size(), "-byte reservation is exhausted (", at + n,
         " bytes needed); the memory census undercounted");
  return block_.data() + at;
}

bool ResidentArena::holds(const void* p) const {
  const auto* c = static_cast<const unsigned char*>(p);
  return c >= block_.data() && c < block_.data() + block_.size();
}

namespace {

// Moves `found` into the arena: the packed GPTQ matrices in batches, each
// followed by malloc_trim (the freed heap copies go back to the system), then
// the dense matrices in chunks whose source pages are dropped as soon as they
// are copied.
void move_into(const Found& found, ResidentArena& arena) {
  const std::vector<Linear*>& mats = found.dense;
  const std::vector<ops::GptqMatrix*>& packed = found.gptq;
  constexpr int64_t kBatch = 128;
  const int64_t np = static_cast<int64_t>(packed.size());
  for (int64_t b0 = 0; b0 < np; b0 += kBatch) {
    const int64_t b1 = std::min(np, b0 + kBatch);
    parallel_for(b1 - b0, 1, [&](int64_t i0, int64_t i1, int) {
      for (int64_t j = b0 + i0; j < b0 + i1; ++j) {
        ops::GptqMatrix* g = packed[static_cast<size_t>(j)];
        g->move_storage(arena.alloc(static_cast<size_t>(g->storage_bytes())));
      }
    });
    malloc_trim(0);
  }
  constexpr size_t kChunk = size_t{16} << 20;
  parallel_for(static_cast<int64_t>(mats.size()), 1, [&](int64_t i0, int64_t i1, int) {
    for (int64_t i = i0; i < i1; ++i) {
      ops::DenseMatrix& d = mats[static_cast<size_t>(i)]->dense;
      const size_t n = static_cast<size_t>(d.weight_bytes());
      const auto* src = static_cast<const unsigned char*>(d.weights());
      unsigned char* dst = arena.alloc(n);
      for (size_t at = 0; at < n; at += kChunk) {
        const size_t len = std::min(kChunk, n - at);
        std::memcpy(dst + at, src + at, len);
        // The pages now wholly copied: from the one holding byte `at` (its
        // first part was copied with the last chunk) to the last whole one.
        if (d.owned.empty()) {
          const size_t back = at == 0 ? 0 : reinterpret_cast<uintptr_t>(src + at) % page_size();
          drop_pages(src + at - back, len + back);
        }
      }
      if (!d.owned.empty()) std::vector<uint8_t>().swap(d.owned);   // an int8 re-encoding: free the heap copy
      d.data = dst;
    }
  });
  if (!mats.empty()) malloc_trim(0);
}

Found skip_held(Found f, const ResidentArena& arena) {
  std::erase_if(f.dense, [&](Linear* l) { return arena.holds(l->dense.weights()); });
  return f;
}

}  // namespace

void make_layer_resident(LayerWeights& l, ResidentArena& arena, bool keep_experts_mapped) {
  Found found;
  collect_layer(l, found, !keep_experts_mapped);
  move_into(skip_held(std::move(found), arena), arena);
}

void make_rest_resident(ModelWeights& w, ResidentArena& arena) {
  Found found;
  if (!w.embed || w.lm_head.dense.data != w.embed->data) collect(w.lm_head, found);
  if (w.mtp) {
    collect(w.mtp->fc, found);
    collect_layer(w.mtp->layer, found, true);
  }
  move_into(skip_held(std::move(found), arena), arena);
}

}  // namespace qinfer::model
