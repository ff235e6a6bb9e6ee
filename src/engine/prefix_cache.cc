#include "engine/prefix_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "util/system_memory.h"

namespace qinfer::engine {

namespace {

uint64_t splitmix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
uint64_t mix(uint64_t h, uint64_t x) { return splitmix(h ^ splitmix(x)); }

constexpr uint64_t kRootSeed = 0x51f15e7a11c0ffeeull;

}  // namespace

size_t mem_available_bytes() {
  // The memory plan's reading: MemAvailable, or the memory cgroup's free room when tighter.
  return static_cast<size_t>(read_system_memory().usable().value_or(0));
}

uint64_t image_content_hash(int64_t grid_t, int64_t grid_h, int64_t grid_w, const std::vector<float>& pixels) {
  uint64_t h = mix(mix(mix(kRootSeed, grid_t), grid_h), grid_w);
  for (float f : pixels) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    h = mix(h, bits);
  }
  return mix(h, pixels.size());
}

void extend_block_keys(const int* tokens, int64_t n_tokens, int64_t B, const std::vector<ImageKey>& images,
                       std::vector<BlockKey>& keys, std::vector<uint64_t>& extras, uint64_t salt) {
  for (int64_t b = static_cast<int64_t>(keys.size()); (b + 1) * B <= n_tokens; ++b) {
    const int64_t lo = b * B, hi = lo + B;
    uint64_t extra = salt;
    for (const ImageKey& im : images) {
      if (im.end <= lo || im.begin >= hi) continue;
      extra = mix(mix(mix(extra, im.hash), static_cast<uint64_t>(im.begin)), static_cast<uint64_t>(im.end));
    }
    uint64_t h = mix(b == 0 ? kRootSeed : keys.back(), extra);
    for (int64_t t = lo; t < hi; ++t) h = mix(h, static_cast<uint32_t>(tokens[t]));
    keys.push_back(h);
    extras.push_back(extra);
  }
}

PrefixCache::Entry* PrefixCache::find(const std::vector<BlockKey>& keys, const std::vector<uint64_t>& extras,
                                      const int* tokens, int64_t b) {
  auto it = map_.find(keys[b]);
  if (it == map_.end()) return nullptr;
  Entry& e = it->second;
  if (e.has_parent != (b > 0) || (b > 0 && e.parent != keys[b - 1]) || e.extra != extras[b]) return nullptr;
  if (!std::equal(e.tokens.begin(), e.tokens.end(), tokens + b * B_)) return nullptr;
  return &e;
}

void PrefixCache::touch(Entry& e, BlockKey key) {
  lru_.erase(e.lru);
  lru_.push_front(key);
  e.lru = lru_.begin();
}

PrefixCache::Hit PrefixCache::lookup(const std::vector<BlockKey>& keys, const std::vector<uint64_t>& extras,
                                     const int* tokens, int64_t max_blocks) {
  Hit hit;
  std::vector<Entry*> chain;
  const int64_t n = std::min<int64_t>(max_blocks, static_cast<int64_t>(keys.size()));
  for (int64_t b = 0; b < n; ++b) {
    Entry* e = find(keys, extras, tokens, b);
    if (!e) break;
    chain.push_back(e);
    if (e->state.data) hit.blocks = b + 1;
  }
  if (hit.blocks == 0) return hit;
  for (int64_t b = 0; b < hit.blocks; ++b) hit.kv.push_back(chain[b]->kv);
  hit.state = chain[hit.blocks - 1]->state;
  touch_chain(keys, hit.blocks);
  return hit;
}

void PrefixCache::touch_chain(const std::vector<BlockKey>& keys, int64_t n) {
  // Last block first, so a chain's parents are more recent than its tail: the scan
  // from the old end meets the leaves first.
  for (int64_t b = n - 1; b >= 0; --b) {
    auto it = map_.find(keys[b]);
    if (it != map_.end()) touch(it->second, keys[b]);
  }
}

bool PrefixCache::has_block(const std::vector<BlockKey>& keys, const std::vector<uint64_t>& extras,
                            const int* tokens, int64_t b) {
  return find(keys, extras, tokens, b) != nullptr;
}

bool PrefixCache::has_state(BlockKey key) const {
  auto it = map_.find(key);
  return it != map_.end() && it->second.state.data;
}

void PrefixCache::erase(BlockKey key) {
  auto it = map_.find(key);
  Entry& e = it->second;
  bytes_ -= e.kv.bytes + (e.state.data ? e.state.bytes : 0);
  if (e.state.data) {
    --states_;
    state_bytes_ -= e.state.bytes;
  }
  if (e.has_parent) {
    auto p = map_.find(e.parent);
    if (p != map_.end()) --p->second.children;
  }
  lru_.erase(e.lru);
  map_.erase(it);
}

bool PrefixCache::make_room(size_t need, BlockKey keep1, BlockKey keep2) {
  // Oldest first: an unreferenced leaf goes whole; an inner entry (its children still
  // cached) can give up its state alone. Entries read by running sequences stay. A
  // pass can turn a parent already passed into a leaf: scan again while it helps.
  // First whether enough can go at all (a running sequence reads a whole chain from its
  // first block, so every unreferenced entry can become a leaf): if not, nothing is dropped.
  if (bytes_ + need <= budget_) return true;
  size_t freeable = 0;
  for (const auto& [key, e] : map_) {
    if (key == keep1 || key == keep2) continue;
    if (e.state.data) freeable += e.state.bytes;
    if (e.kv.data.use_count() == 1) freeable += e.kv.bytes;
  }
  if (bytes_ - std::min(bytes_, freeable) + need > budget_) return false;
  bool progress = true;
  while (bytes_ + need > budget_ && progress) {
    progress = false;
    auto it = lru_.end();
    while (bytes_ + need > budget_ && it != lru_.begin()) {
      --it;
      const BlockKey key = *it;
      if (key == keep1 || key == keep2) continue;
      Entry& e = map_.find(key)->second;
      if (e.children == 0 && e.kv.data.use_count() == 1) {
        ++it;   // erase() unlinks the entry: step to its older neighbour (or end) first
        erase(key);
        ++evicted_blocks_;
        progress = true;
      } else if (e.state.data) {
        bytes_ -= e.state.bytes;
        state_bytes_ -= e.state.bytes;
        e.state = {};
        --states_;
        ++evicted_states_;
        progress = true;
      }
    }
  }
  return bytes_ + need <= budget_;
}

bool PrefixCache::insert_block(const std::vector<BlockKey>& keys, const std::vector<uint64_t>& extras,
                               const int* tokens, int64_t b, SavedBlock kv) {
  const BlockKey key = keys[b];
  if (map_.count(key)) return false;   // present (the caller checked has_block) or a collision
  Entry* parent = nullptr;
  if (b > 0) {
    parent = find(keys, extras, tokens, b - 1);
    if (!parent) return false;
  }
  if (!make_room(kv.bytes, b > 0 ? keys[b - 1] : key, key)) {
    ++refused_;
    return false;
  }
  Entry e;
  e.has_parent = b > 0;
  if (b > 0) e.parent = keys[b - 1];
  e.tokens.assign(tokens + b * B_, tokens + (b + 1) * B_);
  e.extra = extras[b];
  e.kv = std::move(kv);
  bytes_ += e.kv.bytes;
  lru_.push_front(key);
  e.lru = lru_.begin();
  if (parent) ++parent->children;
  map_.emplace(key, std::move(e));
  return true;
}

bool PrefixCache::insert_state(BlockKey key, SavedState st) {
  auto it = map_.find(key);
  if (it == map_.end() || it->second.state.data) return false;
  if (!make_room(st.bytes, key, key)) {
    ++refused_;
    return false;
  }
  it = map_.find(key);
  it->second.state = std::move(st);
  bytes_ += it->second.state.bytes;
  state_bytes_ += it->second.state.bytes;
  ++states_;
  touch(it->second, key);
  return true;
}

PrefixCacheStats PrefixCache::stats() const {
  PrefixCacheStats s;
  s.entries = static_cast<int64_t>(map_.size());
  s.states = states_;
  s.bytes = bytes_;
  s.budget = budget_;
  s.state_bytes = state_bytes_;
  s.kv_bytes = bytes_ - state_bytes_;
  s.evicted_blocks = evicted_blocks_;
  s.evicted_states = evicted_states_;
  s.refused = refused_;
  return s;
}

}  // namespace qinfer::engine
