// The per-layer pieces of the batched forward pass. Rows of the batch are the
// tokens of all sequences, one contiguous span per sequence.
#pragma once
#include <cstdint>
#include <vector>

#include "io/config.h"
#include "model/arena.h"
#include "model/sequence_state.h"
#include "model/weights.h"

namespace qinfer::model {

struct Span {
  SequenceState* state = nullptr;
  int64_t begin = 0;   // first batch row
  int64_t n = 0;       // rows
  int64_t pos0 = 0;    // position of the first row (tokens already in the cache)
  // Rotary positions (images, mRoPE): mrope_pos [n][3] (t, h, w) when given, else
  // pos0 + t + rope_delta on all three streams. KV slots and the causal mask
  // always follow the token index pos0 + t.
  const int64_t* mrope_pos = nullptr;
  int64_t rope_delta = 0;
  bool keep_states = false;   // DeltaNet: keep the per-token states for SequenceState::rollback
};

// Gated DeltaNet token mixer: U [N][H] (normed input) -> out [N][H].
// Updates each span's conv and recurrent state (linear-layer index `cache_index`).
void deltanet_forward(const TextConfig& tc, const DeltaNetWeights& w, int cache_index, const float* U, int64_t N,
                      const std::vector<Span>& spans, float* out, Arena& ar);

// Gated full attention: U [N][H] -> out [N][H]; appends keys/values to caches[i]
// (one per span) at positions pos0..pos0+n-1.
void attention_forward(const TextConfig& tc, const AttentionWeights& w, const float* inv_freq, const float* U,
                       int64_t N, const std::vector<Span>& spans, const std::vector<KvCache*>& caches, float* out,
                       Arena& ar);
// Only the cache part of attention_forward: the rows' keys (k_norm, rotary) and values
// appended to each span's cache (rows whose attention output nobody reads: the MTP
// head's rows that only bring its cache up to date).
void attention_write_kv(const TextConfig& tc, const AttentionWeights& w, const float* inv_freq, const float* U,
                        int64_t N, const std::vector<Span>& spans, const std::vector<KvCache*>& caches, Arena& ar);

// Sees the inputs of each routed expert's products during moe_forward (the GPTQ
// quantizer builds per-expert Hessians from them). Called on the calling thread,
// once per expert that received rows, in ascending expert order.
struct MoeObserver {
  virtual ~MoeObserver() = default;
  // X [n][hidden]: the normed inputs of the n tokens routed to expert e (gate_proj and up_proj input).
  virtual void gate_up_input(int64_t e, const float* X, int64_t n) {}
  // X [n][moe_intermediate]: silu(gate) * up of the same rows (down_proj input).
  virtual void down_input(int64_t e, const float* X, int64_t n) {}
};

// Sparse MoE block with shared expert: U [N][H] -> out [N][H]. When topk is not
// null it receives the chosen experts [N][top_k] in descending probability.
void moe_forward(const TextConfig& tc, const MoeWeights& w, const float* U, int64_t N, float* out,
                 std::vector<int>* topk, Arena& ar, MoeObserver* observer = nullptr);

// Scratch buffers come from `ar`, which decoder_layer resets on entry.

// One decoder layer in place on the residual stream X [N][H].
void decoder_layer(const TextConfig& tc, const LayerWeights& l, const float* inv_freq, float* X, int64_t N,
                   const std::vector<Span>& spans, const std::vector<KvCache*>& caches, std::vector<int>* topk,
                   Arena& ar, MoeObserver* observer = nullptr);

// The cache shapes of one sequence of this text model (mtp: with the MTP head's cache).
StateShape text_state_shape(const TextConfig& tc, bool mtp);

}  // namespace qinfer::model
