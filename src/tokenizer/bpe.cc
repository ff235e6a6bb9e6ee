#include "tokenizer/bpe.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace qinfer::tok {

void PairTable::build(const std::vector<Merge>& merges) {
  size_t cap = 16;
  shift_ = 60;
  while (cap < merges.size() * 2) cap <<= 1, --shift_;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const Merge& m = merges[rank];
    const uint64_t key = pack(m.left, m.right);
    size_t i = hash(key);
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask_;
    if (slots_[i].key == key) continue;  // a repeated pair keeps its first (lowest) rank
    slots_[i].key = key;
    slots_[i].value = {static_cast<int>(rank), m.merged};
  }
}

namespace {
// Words up to this many bytes are cached, at most kShards * kMaxPerShard of them.
constexpr size_t kMaxCachedWord = 64;
constexpr size_t kShards = 32;
constexpr size_t kMaxPerShard = 8192;
}  // namespace

struct BpeModel::Cache {
  struct Hash {  // transparent, so lookups by string_view do not allocate
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int>, Hash, std::equal_to<>> map;
  };
  std::array<Shard, kShards> shards;
};

BpeModel::BpeModel(const std::array<int, 256>& byte_ids, const std::vector<Merge>& merges)
    : byte_ids_(byte_ids), cache_(new Cache) {
  pairs_.build(merges);
}

BpeModel::~BpeModel() = default;

void BpeModel::encode_word(std::string_view word, std::vector<int>& out) const {
  if (word.size() == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  if (word.size() > kMaxCachedWord) {
    merge_word(word, out);
    return;
  }
  Cache::Shard& shard = cache_->shards[(std::hash<std::string_view>{}(word) >> 7) % kShards];
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.map.find(word);
    if (it != shard.map.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t before = out.size();
  merge_word(word, out);
  std::vector<int> ids(out.begin() + before, out.end());
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.map.size() >= kMaxPerShard) shard.map.clear();
  shard.map.emplace(std::string(word), std::move(ids));
}

void BpeModel::merge_word(std::string_view word, std::vector<int>& out) const {
  struct Sym {
    int id, prev, next;  // next == -1 at the end; id == -1 once merged into its left neighbour
  };
  struct Cand {
    int rank, pos;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  thread_local std::vector<Sym> syms;
  thread_local std::vector<Cand> heap;
  const int n = static_cast<int>(word.size());
  syms.resize(n);
  heap.clear();
  for (int i = 0; i < n; ++i) syms[i] = {byte_ids_[static_cast<unsigned char>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
  const auto push = [&](int pos) {
    const int next = syms[pos].next;
    if (next < 0) return;
    if (const PairTable::Value* v = pairs_.find(syms[pos].id, syms[next].id)) {
      heap.push_back({v->rank, pos});
      std::push_heap(heap.begin(), heap.end(), std::greater<Cand>());
    }
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<Cand>());
    const Cand c = heap.back();
    heap.pop_back();
    Sym& s = syms[c.pos];
    if (s.id < 0 || s.next < 0) continue;
    const PairTable::Value* v = pairs_.find(s.id, syms[s.next].id);
    if (v == nullptr || v->rank != c.rank) continue;  // stale: a neighbour changed since
    Sym& right = syms[s.next];
    s.id = v->merged;
    right.id = -1;
    s.next = right.next;
    if (s.next >= 0) syms[s.next].prev = c.pos;
    if (s.prev >= 0) push(s.prev);
    push(c.pos);
  }
  for (int i = 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
}

}  // namespace qinfer::tok
