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

void collect_layer(LayerWeights& l, Found& out) {
  for (Linear* x : {&l.delta.in_qkv, &l.delta.in_z, &l.delta.in_b, &l.delta.in_a, &l.delta.out, &l.attn.q, &l.attn.k,
                    &l.attn.v, &l.attn.o, &l.moe.router, &l.moe.shared_gate, &l.moe.shared_up, &l.moe.shared_down,
                    &l.moe.shared_expert_gate})
    collect(*x, out);
  for (Expert& e : l.moe.experts)
    for (Linear* x : {&e.gate_up, &e.gate, &e.up, &e.down}) collect(*x, out);
}

}  // namespace

void drop_pages(const void* p, size_t n) {
  const size_t page = page_size();
  const uintptr_t a = round_up(reinterpret_cast<uintptr_t>(p), page);
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (b > a) madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
}

ResidentBlock::ResidentBlock(size_t bytes) : size_(round_up(bytes == 0 ? 1 : bytes, kHuge)) {
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail("cannot map ", size_, " bytes for the dense weights: ", std::strerror(errno));
  madvise(p, size_, MADV_HUGEPAGE);   // advice only; ignored where THP is off
  data_ = static_cast<unsigned char*>(p);
}

ResidentBlock::~ResidentBlock() {
  if (data_) munmap(data_, size_);
}

void make_resident(ModelWeights& w) {
  Found found;
  for (LayerWeights& l : w.layers) collect_layer(l, found);
  if (!w.embed || w.lm_head.dense.data != w.embed->data) collect(w.lm_head, found);
  if (w.mtp) {
    collect(w.mtp->fc, found);
    collect_layer(w.mtp->layer, found);
  }
  const std::vector<Linear*>& mats = found.dense;
  const std::vector<ops::GptqMatrix*>& packed = found.gptq;
  const size_t nd = mats.size(), total = nd + packed.size();
  if (total == 0) return;
  std::vector<size_t> offset(total + 1, 0);
  for (size_t i = 0; i < total; ++i) {
    const size_t b = i < nd ? static_cast<size_t>(mats[i]->dense.bytes())
                            : static_cast<size_t>(packed[i - nd]->storage_bytes());
    offset[i + 1] = offset[i] + round_up(b, kAlign);
  }
  w.resident = std::make_unique<ResidentBlock>(offset.back());
  unsigned char* base = w.resident->data();
  // The packed experts first, in batches each followed by malloc_trim: the freed
  // heap copies go back to the system as the block fills. Then the dense
  // matrices, in chunks whose source pages are dropped as soon as they are
  // copied (a 1 GB lm_head copied whole would be resident twice for a moment).
  // The peak stays near one copy of the weights.
  std::vector<size_t> order(total);
  for (size_t i = 0; i < total; ++i) order[i] = i < packed.size() ? nd + i : i - packed.size();
  constexpr size_t kChunk = size_t{16} << 20;
  constexpr int64_t kBatch = 128;
  for (int64_t b0 = 0; b0 < static_cast<int64_t>(total); b0 += kBatch) {
    const int64_t b1 = std::min<int64_t>(static_cast<int64_t>(total), b0 + kBatch);
    parallel_for(b1 - b0, 1, [&](int64_t i0, int64_t i1, int) {
      for (int64_t j = b0 + i0; j < b0 + i1; ++j) {
        const size_t i = order[static_cast<size_t>(j)];
        if (i >= nd) {
          packed[i - nd]->move_storage(base + offset[i]);
          continue;
        }
        ops::DenseMatrix& d = mats[i]->dense;
        const size_t n = static_cast<size_t>(d.rows * d.cols) * (d.type == ops::WType::Q8 ? 1 : d.type == ops::WType::F32 ? 4 : 2);
        const auto* src = static_cast<const unsigned char*>(d.weights());
        for (size_t at = 0; at < n; at += kChunk) {
          const size_t len = std::min(kChunk, n - at);
          std::memcpy(base + offset[i] + at, src + at, len);
          // The pages now wholly copied: from the one holding byte `at` (its
          // first part was copied with the last chunk) to the last whole one.
          if (d.owned.empty()) {
            const size_t back = at == 0 ? 0 : reinterpret_cast<uintptr_t>(src + at) % page_size();
            drop_pages(src + at - back, len + back);
          }
        }
        if (!d.owned.empty()) std::vector<uint8_t>().swap(d.owned);   // an int8 re-encoding: free the heap copy
        d.data = base + offset[i];
      }
    });
    malloc_trim(0);
  }
}

}  // namespace qinfer::model
