// Prefix caching, model side (the engine's cache is engine/prefix_cache.h): immutable
// copies of parts of a SequenceState, and a new state built from them.
//  * KvBlockCopy: KV rows [b*B, (b+1)*B) of every full-attention layer (B =
//    KvCache::kBlockTokens), one allocation (huge pages when large, as the KV cache).
//  * RecurrentCopy: conv + recurrent state of every Gated DeltaNet layer at a
//    position that is a multiple of B (the state is not a sum over tokens: it is
//    kept whole, exactly as the forward pass left it).
//    With draft rows (a speculating sequence, MTP head loaded) it also holds the MTP
//    layer's KV rows of the block.
// restore_prefix makes a state at position n*B whose first n KV blocks ARE the
// copies (shared read-only, not copied: the forward pass writes only rows at or past
// the position) and whose DeltaNet state is a copy of the snapshot. Blocks with draft
// rows also give the MTP cache rows 0 .. n*B-2 (the last block's MTP rows are copied,
// not shared): MTP row n*B-1 depends on token n*B, which is not part of the prefix, so
// the caller recomputes it from the main model's hidden row n*B-1 (kept by the engine
// with the snapshot) and the new sequence's token n*B.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/sequence_state.h"

namespace qinfer {

class KvBlockCopy {
 public:
  KvBlockCopy(int layers, int64_t width, int draft_layers = 0);
  ~KvBlockCopy();
  KvBlockCopy(const KvBlockCopy&) = delete;
  KvBlockCopy& operator=(const KvBlockCopy&) = delete;
  int layers() const { return layers_; }               // full-attention layers, then
  int draft_layers() const { return draft_layers_; }   // MTP layers (0: no draft rows)
  int64_t width() const { return width_; }
  float* k(int layer) { return data_ + (2 * layer) * rows_floats(); }
  float* v(int layer) { return data_ + (2 * layer + 1) * rows_floats(); }
  const float* k(int layer) const { return data_ + (2 * layer) * rows_floats(); }
  const float* v(int layer) const { return data_ + (2 * layer + 1) * rows_floats(); }
  size_t bytes() const { return bytes_; }   // memory held
  static size_t size_for(int layers, int64_t width);   // bytes() of a copy of that shape (all layers)

 private:
  int64_t rows_floats() const { return KvCache::kBlockTokens * width_; }
  int layers_, draft_layers_;
  int64_t width_;
  float* data_ = nullptr;
  size_t bytes_ = 0;
};

struct RecurrentCopy {
  int64_t position = 0;                  // tokens consumed when it was taken
  std::vector<DeltaNetState> delta;      // per DeltaNet layer
  size_t bytes() const;
};

// Rows [b*B, (b+1)*B) must all be written: (b+1)*B <= s.n_tokens(), and with draft_rows
// (b+1)*B <= s.mtp_tokens() and an MTP layer. Throws Error otherwise.
std::shared_ptr<const KvBlockCopy> copy_kv_block(const SequenceState& s, int64_t b, bool draft_rows = false);
// s.n_tokens() must be a multiple of B. Throws Error otherwise.
std::shared_ptr<const RecurrentCopy> copy_recurrent(const SequenceState& s);
// s must be empty (n_tokens() == 0); blocks.size() * B == r.position; shapes must match;
// the blocks all have draft rows or none do.
void restore_prefix(SequenceState& s, const std::vector<std::shared_ptr<const KvBlockCopy>>& blocks,
                    const RecurrentCopy& r);

// Bytes of one KvBlockCopy (with or without the MTP layer's rows) and one RecurrentCopy.
size_t kv_block_copy_bytes(const StateShape& shape, bool draft_rows = false);
size_t recurrent_copy_bytes(const StateShape& shape);

}  // namespace qinfer
