// Prefix caching across requests (issue 14). The unit is a block of B tokens (the
// runner's prefix_block_tokens(), 256 for the Qwen model: its KV cache block).
//  * Block b of a token sequence is keyed by a hash chain: key(b) = H(key(b-1), its B
//    tokens, the content hash of every image whose placeholder tokens fall in it), so a
//    key names the whole prefix up to the end of block b, as vLLM's block hashes do.
//    An entry also keeps its parent key, tokens and image hash and a lookup compares
//    them, and only leaf entries are evicted, so a chain found is the exact prefix (a
//    64-bit collision makes an insert fail, never a wrong hit).
//  * An entry holds the block's attention KV (SavedBlock) and optionally the recurrent
//    state at the block's end (SavedState: DeltaNet conv + delta-rule state, taken
//    exactly there). A request resumes from the longest prefix whose blocks are all
//    present AND whose last block has a state.
//  * Memory: a byte budget over all entries; inserting evicts least-recently-used
//    entries that no running sequence reads (SavedBlock::data not shared) and that
//    have no children; a state on an inner entry can be dropped alone.
// Used by the engine's scheduler thread only (no locking).
#pragma once
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "engine/model_runner.h"

namespace qinfer::engine {

using BlockKey = uint64_t;

// Content hash of one image (grid + preprocessed pixels) and where its placeholder
// tokens lie in the (expanded) prompt.
struct ImageKey {
  int64_t begin = 0, end = 0;    // token range [begin, end)
  uint64_t hash = 0;
};
uint64_t image_content_hash(int64_t grid_t, int64_t grid_h, int64_t grid_w, const std::vector<float>& pixels);

// The per-block keys of `tokens` (full blocks only: n_tokens / B of them), extending
// `keys` (whose entries, already computed for the same tokens, are kept).
// image_hash[b] of each block goes to `extras` likewise. A nonzero `salt` starts every
// block's extra: chains of different salts never meet (speculating sequences save
// blocks with the MTP head's rows, kDraftRowsSalt; the others without).
void extend_block_keys(const int* tokens, int64_t n_tokens, int64_t B, const std::vector<ImageKey>& images,
                       std::vector<BlockKey>& keys, std::vector<uint64_t>& extras, uint64_t salt = 0);
constexpr uint64_t kDraftRowsSalt = 0x6d7470726f777321ull;

// One request's side of the cache: the tokens it consumed (prompt, then sampled ids),
// their block keys (grown as they are needed) and what it has saved.
struct PrefixSeq {
  std::vector<int> tokens;
  std::vector<ImageKey> images;
  std::vector<BlockKey> keys;
  std::vector<uint64_t> extras;
  int64_t cached = 0;            // prompt tokens restored from the cache
  int64_t state_saved_at = 0;    // position of the last state saved (or restored)
  SavedState pending;            // the last block-edge state of the decode, saved at the end
  uint64_t salt = 0;             // kDraftRowsSalt: a speculating sequence (blocks with MTP rows)
  void extend_keys(int64_t n_tokens, int64_t B) {
    extend_block_keys(tokens.data(), n_tokens, B, images, keys, extras, salt);
  }
};

// What a new allocation can get (util/system_memory: MemAvailable, or the memory cgroup's
// free room when tighter) in bytes; 0 when neither can be read.
size_t mem_available_bytes();

struct PrefixCacheStats {
  int64_t entries = 0, states = 0;
  size_t bytes = 0, budget = 0;
  size_t kv_bytes = 0, state_bytes = 0;   // bytes = kv_bytes + state_bytes (as allocated)
  int64_t evicted_blocks = 0, evicted_states = 0, refused = 0;   // refused: no room (all in use)
};

class PrefixCache {
 public:
  PrefixCache(size_t budget_bytes, int64_t block_tokens) : budget_(budget_bytes), B_(block_tokens) {}
  int64_t block_tokens() const { return B_; }

  struct Hit {
    int64_t blocks = 0;             // the prefix is blocks * B tokens; 0: miss
    std::vector<SavedBlock> kv;     // blocks 0 .. blocks-1
    SavedState state;               // at blocks * B
  };
  // The longest cached prefix of at most max_blocks blocks with a state at its end.
  // Marks what it returns as recently used.
  Hit lookup(const std::vector<BlockKey>& keys, const std::vector<uint64_t>& extras, const int* tokens,
             int64_t max_blocks);
  // Marks blocks 0..n-1 of the chain (those present) as used, the tail oldest.
  void touch_chain(const std::vector<BlockKey>& keys, int64_t n);
  // Whether block b of this chain is present.
  bool has_block(const std::vector<BlockKey>& keys, const std::vector<uint64_t>& extras, const int* tokens,
                 int64_t b);
  bool has_state(BlockKey key) const;
  // Adds block b (its parent, block b-1, must be present). False: no room, or a key
  // collision (another prefix holds the key).
  bool insert_block(const std::vector<BlockKey>& keys, const std::vector<uint64_t>& extras, const int* tokens,
                    int64_t b, SavedBlock kv);
  // Puts a state on the (present) entry of `key`, replacing none that is there. False: no room.
  bool insert_state(BlockKey key, SavedState st);

  PrefixCacheStats stats() const;

 private:
  struct Entry {
    BlockKey parent = 0;
    bool has_parent = false;
    std::vector<int> tokens;
    uint64_t extra = 0;
    SavedBlock kv;
    SavedState state;               // data null: none
    int children = 0;
    std::list<BlockKey>::iterator lru;
  };
  Entry* find(const std::vector<BlockKey>& keys, const std::vector<uint64_t>& extras, const int* tokens,
              int64_t b);
  void touch(Entry& e, BlockKey key);
  // Frees room for `need` bytes; never evicts the entries named in keep.
  bool make_room(size_t need, BlockKey keep1, BlockKey keep2);
  void erase(BlockKey key);

  size_t budget_;
  int64_t B_;
  size_t bytes_ = 0, state_bytes_ = 0;
  std::unordered_map<BlockKey, Entry> map_;
  std::list<BlockKey> lru_;         // front: most recently used
  int64_t states_ = 0, evicted_blocks_ = 0, evicted_states_ = 0, refused_ = 0;
};

}  // namespace qinfer::engine
