// The engine's view of a model: something that advances several sequences in one
// batched call. The real one wraps qinfer::Model (model_runner.cc); tests use fakes.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/speculative.h"
#include "model/memory_plan.h"

namespace qinfer::vision {
struct ImagePatches;
}

namespace qinfer::engine {

class RunnerSequence {
 public:
  virtual ~RunnerSequence() = default;
};

// Prefix caching (engine/prefix_cache.h): what a runner saves of a sequence. Opaque to
// the engine and immutable; shared by the cache and by the sequences restored from it
// (data.use_count() > 1: some running sequence still reads it).
struct SavedBlock {                  // the KV rows of one block, every attention layer
  std::shared_ptr<const void> data;
  size_t bytes = 0;
};
struct SavedState {                  // the recurrent (DeltaNet conv + delta-rule) state
  std::shared_ptr<const void> data;
  size_t bytes = 0;
  int64_t position = 0;              // tokens consumed when it was taken (a block edge)
  // A speculating sequence's (engine side): the post-norm hidden row of position
  // position-1, from which a resumed sequence recomputes its MTP cache row position-1
  // (that row depends on token `position`, which is not part of the prefix).
  std::shared_ptr<const std::vector<float>> draft_hidden;
};

struct RunnerStep {
  RunnerSequence* seq;
  const int* tokens;
  int64_t n_tokens;      // >= 1: a prefill chunk, one decode token or a verify run
  float* logits;         // [vocab] row of the step's last token ([n_tokens][vocab] when all_logits)
  bool all_logits = false;
  float* hidden = nullptr;   // optional [n_tokens][hidden_size()]: post-norm hidden states
  bool keep_states = false;  // verify run: rollback() may keep any prefix of its tokens
  // Images (see Model::Step): per-token replacement embeddings (null rows: the token's
  // own), [n_tokens][3] mRoPE positions, and the decode position offset.
  const float* const* embed_rows = nullptr;
  const int64_t* mrope_pos = nullptr;
  int64_t rope_delta = 0;
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual int vocab_size() const = 0;          // logits row length
  virtual int64_t max_context() const = 0;
  virtual std::vector<int> eos_token_ids() const = 0;
  virtual std::unique_ptr<RunnerSequence> new_sequence() = 0;
  // One batched call advancing every step's sequence by its tokens.
  virtual void forward(const std::vector<RunnerStep>& steps) = 0;

  // Speculative decoding (engine/speculative.h); a runner without it keeps these defaults.
  virtual DraftSource* draft_source() { return nullptr; }   // the MTP head, when loaded
  // After a keep_states step of n tokens: keep its first `keep` (1..n) tokens, exactly.
  virtual void rollback(RunnerSequence*, int64_t) { throw std::logic_error("rollback: not supported by this runner"); }

  // Image input. has_vision(): the model has a loaded vision tower; then
  // encode_images returns the merged embeddings of all images in order,
  // [sum merged tokens][hidden_size()].
  virtual bool has_vision() const { return false; }
  virtual int image_token_id() const { return -1; }
  virtual int spatial_merge_size() const { return 2; }
  virtual int64_t hidden_size() const { return 0; }
  virtual std::vector<float> encode_images(const std::vector<const vision::ImagePatches*>& images);

  // Prefix caching. prefix_block_tokens() > 0: the runner can save block b (rows
  // [b*B, (b+1)*B), all written) and the recurrent state at a position that is a
  // multiple of B, and restore a sequence at n*B from n saved blocks (shared, read
  // only) and a state saved at n*B. 0 (the default): no prefix caching. With
  // draft_rows a block also holds the draft head's cache rows (all must be written); a
  // sequence restored from such blocks has the draft cache rows 0 .. n*B-2 (the draft
  // source is then sent rows from n*B-1 on).
  virtual int64_t prefix_block_tokens() const { return 0; }
  virtual int64_t sequence_tokens(const RunnerSequence& seq) const;   // tokens consumed so far
  virtual SavedBlock save_block(const RunnerSequence& seq, int64_t block, bool draft_rows);
  virtual SavedState save_state(const RunnerSequence& seq);
  virtual std::unique_ptr<RunnerSequence> restore(const std::vector<SavedBlock>& blocks, const SavedState& state);
  // What one saved block and one saved state cost (for the log; 0 when unknown).
  virtual size_t saved_block_bytes(bool /*draft_rows*/) const { return 0; }
  virtual size_t saved_state_bytes() const { return 0; }

  // The KV and recurrent state bytes a sequence of `tokens` tokens holds, as the memory plan
  // counts them (0: unknown, e.g. test runners). The engine's work-memory budget uses it.
  virtual int64_t sequence_bytes(int64_t /*tokens*/) const { return 0; }
};

struct RunnerLoadOptions {
  int threads = 0;
  bool dense_int8 = false;
  int dense_bf16c = -1;      // LoadOptions::dense_bf16c
  bool load_vision = true;   // false: text only (--limit-mm-per-prompt '{"image": 0}')
  // The memory plan's inputs (LoadOptions): budget in bytes (0: available), the KV's
  // tokens per sequence (0: the model's context, lowered to fit) and sequences.
  double memory_budget = 0;
  int64_t max_model_len = 0;
  int64_t max_num_seqs = 1;
  model::ExpertsPlacement experts = model::ExpertsPlacement::kAuto;
  bool load_mtp = false;     // load the mtp.* draft head (error when the checkpoint has none)
  int64_t draft_vocab = 0;   // > 0: the MTP drafts among token ids below this only
  bool draft_int8 = false;   // the MTP drafts score with an int8 copy of the lm_head
  bool draft_layer_int8 = false;   // the MTP layer re-encoded as int8 at load (LoadOptions)
  double prefix_cache_bytes = 0;   // the memory plan's prefix-cache terms (LoadOptions)
  double prefix_cache_share = 0;
};

// Loads qinfer::Model from a checkpoint folder. EOS ids: generation_config.json's
// eos_token_id (int or list) merged with the config's.
std::unique_ptr<ModelRunner> load_model_runner(const std::string& dir, const RunnerLoadOptions& opts);

}  // namespace qinfer::engine
