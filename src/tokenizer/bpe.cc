#include "tokenizer/bpe.h"

#include <algorithm>
#include <queue>

namespace qinfer::tok {

void MergeTable::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap > slots_.size()) grow(cap);
}

void MergeTable::grow(size_t capacity) {
  std::vector<Entry> old = std::move(slots_);
  slots_.assign(capacity, Entry{kEmpty, 0, 0});
  mask_ = capacity - 1;
  count_ = 0;
  for (const Entry& e : old) {
    if (e.key != kEmpty) add(int(e.key >> 32), int(uint32_t(e.key)), e.rank, e.merged);
  }
}

void MergeTable::add(int left, int right, int rank, int merged) {
  if ((count_ + 1) * 2 > slots_.size()) grow(std::max<size_t>(16, slots_.size() * 2));
  const uint64_t key = pack(left, right);
  for (size_t slot = hash(key) & mask_;; slot = (slot + 1) & mask_) {
    Entry& e = slots_[slot];
    if (e.key == key) return;
    if (e.key == kEmpty) {
      e = Entry{key, rank, merged};
      ++count_;
      return;
    }
  }
}

namespace {

struct Candidate {
  int rank;
  int pos;    // index of the left symbol
  int left, right;  // ids the pair had when pushed (stale entries are skipped)
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

// Short pieces: repeatedly merge the best pair by scanning (no heap).
void merge_small(std::vector<int>& ids, const MergeTable& merges) {
  while (ids.size() > 1) {
    int best_rank = INT32_MAX, best_pos = -1, best_id = 0;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      int rank, merged;
      if (merges.find(ids[i], ids[i + 1], &rank, &merged) && rank < best_rank) {
        best_rank = rank;
        best_pos = int(i);
        best_id = merged;
      }
    }
    if (best_pos < 0) return;
    ids[best_pos] = best_id;
    ids.erase(ids.begin() + best_pos + 1);
  }
}

// Long pieces: linked list of symbols and a min-heap of candidate pairs.
void merge_large(std::vector<int>& ids, const MergeTable& merges) {
  const int n = int(ids.size());
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  std::vector<bool> alive(n, true);
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto push = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    int rank, merged;
    if (merges.find(ids[pos], ids[next[pos]], &rank, &merged)) heap.push({rank, pos, ids[pos], ids[next[pos]]});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (!alive[c.pos] || next[c.pos] < 0) continue;
    const int r = next[c.pos];
    if (ids[c.pos] != c.left || ids[r] != c.right) continue;
    int rank, merged;
    merges.find(c.left, c.right, &rank, &merged);
    ids[c.pos] = merged;
    alive[r] = false;
    next[c.pos] = next[r];
    if (next[r] >= 0) prev[next[r]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  int w = 0;
  for (int i = 0; i >= 0 && i < n; i = next[i]) ids[w++] = ids[i];
  ids.resize(w);
}

}  // namespace

void bpe_encode_word(std::string_view bytes, const std::array<int, 256>& byte_ids,
                     const MergeTable& merges, std::vector<int>& out) {
  thread_local std::vector<int> ids;
  ids.clear();
  for (char c : bytes) ids.push_back(byte_ids[static_cast<uint8_t>(c)]);
  if (ids.size() <= 48) {
    merge_small(ids, merges);
  } else {
    merge_large(ids, merges);
  }
  out.insert(out.end(), ids.begin(), ids.end());
}

}  // namespace qinfer::tok
