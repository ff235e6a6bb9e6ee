// The Qwen3.5/3.6 MoE text model (Qwen3_5MoeForConditionalGeneration /
// Qwen3_5MoeForCausalLM): loading a Hugging Face checkpoint folder (BF16/F16/F32
// or GPTQ 4-bit experts) and the batched fp32 forward pass with per-sequence
// caches. docs/MODEL.md describes the math.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/config.h"
#include "model/memory_plan.h"
#include "model/sequence_state.h"

namespace qinfer {

struct LoadOptions {
  bool dense_int8 = false;  // re-encode the large dense matrices as int8 (per-row scale)
  // BF16 dense matrices in the lossless 12-bit form (ops/bf16c.h; resident_dense only):
  // 1 always, 0 never, -1 (--dense auto) where ops::bf16c_pays() finds it faster here
  // (or BF16 faster by at most 10%: a quarter fewer bytes resident).
  int dense_bf16c = -1;     // (auto: only for >= kBf16cAutoMinBytes of dense weights)
  bool load_mtp = false;    // load the mtp.* head when present (skipped quietly when absent)
  int threads = 0;          // worker threads of the global pool; 0 = all cores
  bool resident_dense = true;  // dense weights off the mapping and GPTQ experts into huge pages (model/resident.h)
  bool load_vision = true;     // bind model.visual.* when the checkpoint has a vision_config
                               // (false: text only, as vLLM's --limit-mm-per-prompt '{"image": 0}')
  // The memory plan (model/memory_plan.h), made before any weight is read.
  double memory_budget = 0;    // bytes (--memory-budget-gb); 0: what the system has available
  int64_t max_model_len = 0;   // tokens per sequence the KV must hold; 0: the model's context, lowered to fit
  int64_t max_num_seqs = 1;    // sequences alive at once
  model::ExpertsPlacement experts = model::ExpertsPlacement::kAuto;   // --experts auto|resident|mapped
  // MTP drafts that will score with an int8 copy of the lm_head (made on first use, not
  // at load): the plan counts that copy. draft_vocab > 0: of its first draft_vocab rows.
  bool draft_int8 = false;
  int64_t draft_vocab = 0;
  // The MTP layer (fc, attention, experts, shared expert) re-encoded as int8 at load, in
  // place of its BF16 copy: cheaper drafts, the verified output unchanged; forward_mtp
  // then gives the int8 layer's logits, not the checkpoint's exact ones.
  bool draft_layer_int8 = false;
  // The prefix cache (engine): a given budget is counted like the KV; without one, a
  // context lowered to fit leaves this share of the room for the cache's default budget.
  double prefix_cache_bytes = 0;
  double prefix_cache_share = 0;
};

constexpr double kBf16cAutoMinBytes = 256.0 * (1 << 20);

// The --dense flag: "auto" (BF16, in the 12-bit form where a probe finds it faster),
// "bf16" (as stored), "bf16c" (12-bit form always), "int8" (re-encoded, per-row scale).
// Error naming the flag otherwise.
void parse_dense_mode(const std::string& value, bool* dense_int8, int* dense_bf16c);

// Optional debugging capture of one forward() call (used by the tests). Rows are
// the tokens of all steps in step order. A traced call always runs as one pass.
struct ForwardTrace {
  std::vector<std::vector<int>> router_topk;       // [layer][token * top_k + slot], descending prob
  std::vector<std::vector<float>> layer_outputs;   // [layer + 1][token * hidden]; [0] = embeddings
  std::vector<float> final_hidden;                 // [token * hidden], after the final norm
};

namespace model {
struct ModelWeights;
class ExpertCache;
struct Linear;
class Arena;
}  // namespace model
namespace vision {
class VisionTower;
struct ImagePatches;
}  // namespace vision

class Model {
 public:
  ~Model();
  // Loads and checks every tensor against the config (errors name the tensor);
  // progress goes to stderr.
  static std::unique_ptr<Model> load(const std::string& dir, const LoadOptions& opts = {});

  const ModelConfig& config() const { return config_; }
  std::unique_ptr<SequenceState> new_sequence() const;

  struct Step {                           // one sequence's part of a batched call
    SequenceState* state = nullptr;
    const int* tokens = nullptr;
    int64_t n_tokens = 0;                 // >= 1; prefill chunk or a single decode token
    float* logits = nullptr;              // [n_tokens or 1][vocab] output
    bool all_logits = false;              // false: only the last token's row
    float* hidden = nullptr;              // optional [n_tokens][hidden]: post-final-norm hidden states
                                          // (the MTP head's input)
    bool keep_states = false;             // speculative verify (n_tokens <= kMaxVerifyTokens): keep the
                                          // DeltaNet state after every token for SequenceState::rollback
    // Images (see vision/mm_prompt.h): embed_rows[t], when not null, replaces token
    // t's embedding (a merger row of encode_images); mrope_pos [n_tokens][3] gives the
    // (t, h, w) rotary positions; without it token t rotates at position
    // n_tokens_before + t + rope_delta on all three streams (decode after an image prompt).
    const float* const* embed_rows = nullptr;
    const int64_t* mrope_pos = nullptr;
    int64_t rope_delta = 0;
  };
  static constexpr int64_t kMaxVerifyTokens = 16;
  // The most drafts speculative decoding verifies per step (--speculative-config's
  // num_speculative_tokens; the memory plan sizes each sequence's verify buffers for 1 + this).
  static constexpr int kMaxDraftTokens = 4;
  // Runs all steps as one batched call: the tokens of all sequences go through
  // each weight product together; the sequence-dependent work (attention over its
  // cache, delta rule) runs per sequence. Each state may appear at most once.
  // Not thread-safe: one forward() / forward_mtp() at a time per Model.
  // Bad input (token id >= vocab, position >= max_context, null pointers) throws
  // qinfer::Error before any state is modified.
  // Calls with more than kMaxCallTokens tokens in all run as several passes
  // (same results) to bound activation memory.
  void forward(const std::vector<Step>& steps, ForwardTrace* trace = nullptr);
  static constexpr int64_t kMaxCallTokens = 512;   // a multiple of the delta-rule chunk (64)

  // MTP draft head (docs/MODEL.md §6; needs LoadOptions::load_mtp). Row t of a step takes the
  // main model's post-norm hidden state hidden[t] and the token that follows that
  // position, next_tokens[t]; its rotary position is state->mtp_tokens() + t and it
  // attends over the sequence's own MTP KV cache (rows written by earlier calls).
  struct MtpStep {
    SequenceState* state = nullptr;
    const int* next_tokens = nullptr;
    const float* hidden = nullptr;        // [n][hidden]
    int64_t n = 0;
    float* logits = nullptr;              // [n or 1][vocab] draft logits; null: none (the MTP cache
                                          // is only brought up to date, the lm_head is not read)
    bool all_logits = false;
    float* out_hidden = nullptr;          // optional [n][hidden]: MTP output after mtp.norm
    int64_t vocab_limit = 0;              // > 0: logits over token ids 0..vocab_limit-1 only (rows of
                                          // that length; a cheaper draft lm_head); the same in every step
    bool int8_head = false;               // score with an int8 copy of the lm_head (per-row scale, made on
                                          // first use; the lm_head itself when it is int8 already); the same
                                          // in every step
    bool last_only = false;               // outputs of the last row only (logits [1][vocab], out_hidden
                                          // [1][hidden]; not with all_logits)
  };
  // Rows whose outputs are not asked for (all rows of a step without logits and
  // out_hidden; all but the last with last_only, or with logits only) only bring the MTP
  // cache up to date: their keys and values are written, the rest of the layer (queries,
  // attention, MoE) and the head run for the other rows only.
  void forward_mtp(const std::vector<MtpStep>& steps);

  // The vision tower (null: the checkpoint has none, or LoadOptions::load_vision was off).
  const vision::VisionTower* vision() const { return vision_.get(); }
  // Merger rows of the images, in order: [sum of merged tokens][hidden]. Error without a tower.
  std::vector<float> encode_images(const std::vector<const vision::ImagePatches*>& images) const;

  size_t weight_bytes() const;            // resident bytes of the weights as used
  // The model's context, or the plan's lower one when --max-model-len was not given
  // and the full context's KV did not fit.
  int64_t max_context() const { return max_context_; }
  const model::MemoryPlan& memory_plan() const;
  // File-backed experts' hot set (null unless the plan chose file-backed experts).
  const model::ExpertCache* expert_cache() const;
  bool has_mtp() const;
  // Whether the BF16 dense matrices were loaded in the 12-bit form (LoadOptions::dense_bf16c).
  bool dense_bf16c() const { return dense_bf16c_; }

 private:
  Model() = default;
  void validate(const std::vector<Step>& steps) const;
  void load_vision_tower(bool enabled);
  void forward_batch(const std::vector<Step>& steps, ForwardTrace* trace);
  ModelConfig config_;
  std::unique_ptr<model::ModelWeights> w_;
  std::unique_ptr<model::MemoryPlan> plan_;
  bool dense_bf16c_ = false;
  int64_t max_context_ = 0;
  std::unique_ptr<model::Arena> arena_;   // forward() scratch, kept between calls
  std::unique_ptr<model::Linear> draft_head_;   // lm_head rows 0..vocab_limit-1 (MtpStep::vocab_limit),
  bool draft_head_int8_ = false;                // int8 when MtpStep::int8_head
  std::unique_ptr<vision::VisionTower> vision_;
};

}  // namespace qinfer
