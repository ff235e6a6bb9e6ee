// One sequence's decoding state: the KV cache of every full-attention layer
// (grown in fixed blocks of tokens, never preallocated to the max context), and
// per Gated DeltaNet layer the last kernel-1 pre-convolution inputs (conv state)
// and the fp32 recurrent state S [value heads][key dim][value dim].
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace qinfer {

// Keys (after k_norm and RoPE) and values of one attention layer, fp32,
// row = token position, row width = kv heads * head_dim, in blocks of
// kBlockTokens rows. Within a block each kv head's rows are contiguous (head-major:
// head g of row p at block + g * kBlockTokens * head_dim + (p % kBlockTokens) *
// head_dim), so decode reads one sequential stream per head (rows holding both heads
// side by side: 1.07-1.14x the time in bench_ops_seq at 32k keys on Zen 5, since
// each core's prefetchers also fetch the other head's half of every row). A large
// cache's blocks are carved from 2 MiB chunks in transparent huge pages: decode at
// long context reads the whole cache every step, and from 4 KiB pages that costs a
// TLB miss every other row (bench_ops_seq attention at 32k keys: about 8% slower).
class KvCache {
 public:
  static constexpr int64_t kBlockTokens = 256;
  // heads must divide width (Error otherwise).
  explicit KvCache(int64_t width = 0, int64_t heads = 1);
  int64_t width() const { return width_; }
  int64_t heads() const { return heads_; }
  int64_t head_dim() const { return width_ / heads_; }
  // The layout inside a block, in floats (ops::KvRows takes the same two strides).
  int64_t row_stride() const { return head_dim(); }
  int64_t head_stride() const { return kBlockTokens * head_dim(); }
  int64_t capacity() const { return static_cast<int64_t>(k_.size()) * kBlockTokens; }
  void reserve(int64_t tokens);   // grows block by block (new rows are zero)
  void clear();                   // frees every block
  // Row pos's keys and values, each `width` floats (all heads, head 0 first), into the cache.
  void put(int64_t pos, const float* k, const float* v);
  // Head g of row pos (head_dim floats).
  float* k_at(int64_t pos, int64_t g) { return k_[pos / kBlockTokens] + offset(pos, g); }
  float* v_at(int64_t pos, int64_t g) { return v_[pos / kBlockTokens] + offset(pos, g); }
  const float* k_at(int64_t pos, int64_t g) const { return k_[pos / kBlockTokens] + offset(pos, g); }
  const float* v_at(int64_t pos, int64_t g) const { return v_[pos / kBlockTokens] + offset(pos, g); }
  // Block b (rows b * kBlockTokens ..), kBlockTokens * width floats: what block copies move.
  float* k_block(int64_t b) { return k_[b]; }
  float* v_block(int64_t b) { return v_[b]; }
  const float* k_block(int64_t b) const { return k_[b]; }
  const float* v_block(int64_t b) const { return v_[b]; }
  size_t bytes() const { return bytes_; }   // memory held, with unused chunk space
  void copy_from(const KvCache& o, int64_t tokens);
  // Appends a block whose rows lie in memory owned elsewhere (model/state_copy.h: a
  // prefix-cache block, shared read-only; the owner is kept alive by SequenceState::hold).
  // The forward pass only writes rows at or past the sequence's position, so an attached
  // block below it is never written.
  void attach(const float* k, const float* v);

 private:
  struct Free {
    void operator()(void* p) const;
  };
  int64_t offset(int64_t pos, int64_t g) const { return g * head_stride() + (pos % kBlockTokens) * row_stride(); }
  int64_t width_, heads_;
  std::vector<float*> k_, v_;                        // block starts
  std::vector<std::unique_ptr<void, Free>> chunks_;  // the memory they lie in
  size_t chunk_size_ = 0, chunk_used_ = 0;           // of the last chunk
  size_t bytes_ = 0;
};

struct DeltaNetState {
  std::vector<float> conv;  // [kernel-1][conv_dim], oldest first (pre-conv, pre-SiLU inputs)
  std::vector<float> ssm;   // [value heads][key dim][value dim]
  // Kept by a speculative verify step of n tokens (Model::Step::keep_states) so that
  // SequenceState::rollback can keep any prefix exactly. The verify pass runs the delta
  // rule out of place from ssm into spec_ssm and then swaps the two: ssm holds the state
  // after all n tokens, spec_ssm the state before the step (no copy of a state, whose
  // 2 MiB per layer and token cost more memory traffic than the rule itself). A partial
  // acceptance swaps back and replays the delta rule of the kept tokens from their
  // inputs (the same kernel on the same values: the same bits as decoding them).
  std::vector<float> spec_ssm;    // ssm size
  std::vector<float> spec_kv;     // [n][key dim + value dim]: the tokens' L2-normed k, then v
  std::vector<float> spec_g;      // [n][value heads]: log-decay
  std::vector<float> spec_beta;   // [n][value heads]
  std::vector<float> spec_conv;   // [kernel-1 + n][conv_dim]: the conv state before the step, then its n inputs
};

struct StateShape {
  int num_full_layers = 0, num_linear_layers = 0, num_mtp_layers = 0;
  int64_t kv_width = 0;          // kv heads * head_dim
  int64_t kv_heads = 1;
  int64_t conv_rows = 0;         // kernel - 1
  int64_t conv_dim = 0;          // 2 * key_dim + value_dim
  int64_t ssm_size = 0;          // value heads * key dim * value dim
  int64_t key_heads = 0, value_heads = 0, key_dim = 0, value_dim = 0;   // of the DeltaNet layers
  bool operator==(const StateShape&) const = default;
};

class SequenceState {
 public:
  explicit SequenceState(const StateShape& shape);

  int64_t n_tokens() const { return seen_; }     // tokens consumed so far (= next position)
  void reset();                                  // back to an empty sequence; frees the KV blocks
  size_t memory_bytes() const;                   // bytes held by all caches
  std::unique_ptr<SequenceState> clone() const;  // deep copy (snapshots, prefix reuse)
  // Keeps `owner` alive until reset() or destruction (the memory of attached KV blocks).
  void hold(std::shared_ptr<const void> owner) { held_.push_back(std::move(owner)); }

  // Used by the forward pass.
  const StateShape& shape() const { return shape_; }
  KvCache& kv(int full_layer) { return kv_[full_layer]; }
  KvCache& mtp_kv(int i) { return mtp_kv_[i]; }
  DeltaNetState& delta(int linear_layer) { return delta_[linear_layer]; }
  const KvCache& kv(int full_layer) const { return kv_[full_layer]; }
  const KvCache& mtp_kv(int i) const { return mtp_kv_[i]; }
  const DeltaNetState& delta(int linear_layer) const { return delta_[linear_layer]; }
  void advance(int64_t n) { seen_ += n; }
  int64_t mtp_tokens() const { return mtp_seen_; }
  void advance_mtp(int64_t n) { mtp_seen_ += n; }
  // Speculative decoding: later MTP rows overwrite the cache from this position on.
  void rewind_mtp(int64_t n) { mtp_seen_ = n < mtp_seen_ ? (n < 0 ? 0 : n) : mtp_seen_; }

  // Speculative verification. begin_verify(n) is called by the forward pass for a
  // keep_states step of n tokens (it sizes the per-token buffers of every DeltaNet
  // layer); rollback(keep) then keeps only the first `keep` (1..n) of those tokens:
  // the position goes back (KV rows past it are overwritten by later calls) and each
  // DeltaNet layer's conv and recurrent states become those after token keep-1 (the
  // conv rows copied from what the verify pass kept, the recurrent state replayed from
  // the state before the step: DeltaNetState). Throws Error when no verify step is pending or keep
  // is out of range. Any later forward() ends the pending verify step.
  void begin_verify(int64_t n);
  void rollback(int64_t keep);
  int64_t verify_tokens() const { return verify_n_; }   // 0: none pending

 private:
  StateShape shape_;
  int64_t seen_ = 0, mtp_seen_ = 0;
  int64_t verify_n_ = 0;   // tokens of the pending keep_states step
  std::vector<KvCache> kv_, mtp_kv_;
  std::vector<DeltaNetState> delta_;
  std::vector<std::shared_ptr<const void>> held_;   // owners of attached KV blocks
};

}  // namespace qinfer
