#include "model/resident.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
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

void collect(Linear& l, std::vector<Linear*>& out) {
  if (l.empty() || l.gptq || !l.dense.weights()) return;
  out.push_back(&l);
}

void collect_layer(LayerWeights& l, std::vector<Linear*>& out) {
  for (Linear* x : {&l.delta.in_qkv, &l.delta.in_z, &l.delta.in_b, &l.delta.in_a, &l.delta.out, &l.attn.q, &l.attn.k,
                    &l.attn.v, &l.attn.o, &l.moe.router, &l.moe.shared_gate, &l.moe.shared_up, &l.moe.shared_down,
                    &l.moe.shared_expert_gate})
    collect(*x, out);
  for (Expert& e : l.moe.experts)
    for (Linear* x : {&e.gate_up, &e.gate, &e.up, &e.down}) collect(*x, out);
}

}  // namespace

void drop_pages(const void* p, size_t n) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
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

void make_dense_resident(ModelWeights& w) {
  std::vector<Linear*> mats;
  for (LayerWeights& l : w.layers) collect_layer(l, mats);
  if (!w.embed || w.lm_head.dense.data != w.embed->data) collect(w.lm_head, mats);
  if (w.mtp) {
    collect(w.mtp->fc, mats);
    collect_layer(w.mtp->layer, mats);
  }
  if (mats.empty()) return;
  std::vector<size_t> offset(mats.size() + 1, 0);
  for (size_t i = 0; i < mats.size(); ++i)
    offset[i + 1] = offset[i] + round_up(static_cast<size_t>(mats[i]->dense.bytes()), kAlign);
  w.resident = std::make_unique<ResidentBlock>(offset.back());
  unsigned char* base = w.resident->data();
  parallel_for(static_cast<int64_t>(mats.size()), 1, [&](int64_t i0, int64_t i1, int) {
    for (int64_t i = i0; i < i1; ++i) {
      ops::DenseMatrix& d = mats[i]->dense;
      const size_t n = static_cast<size_t>(d.rows * d.cols) * (d.type == ops::WType::Q8 ? 1 : d.type == ops::WType::F32 ? 4 : 2);
      std::memcpy(base + offset[i], d.weights(), n);
      if (d.owned.empty()) drop_pages(d.data, n);
      else std::vector<uint8_t>().swap(d.owned);   // an int8 re-encoding: free the heap copy
      d.data = base + offset[i];
    }
  });
}

}  // namespace qinfer::model
