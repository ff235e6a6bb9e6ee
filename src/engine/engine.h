// The generation engine: owns the model (through ModelRunner), the tokenizer and the
// chat template, and runs a scheduler thread doing continuous batching:
//  * requests wait in a FIFO queue; at most max_num_seqs are active at once;
//  * each step is ONE batched ModelRunner::forward over every active sequence:
//    one token per decoding sequence plus prefill chunks (prefill_chunk tokens per
//    step in all, so a long prompt does not stall the others);
//  * each sequence is sampled with its own sampler, checked for EOS ids, stop
//    strings and max_tokens, and streamed to its RequestStream;
//  * a cancelled request (client gone) is dropped, and its caches freed, at the
//    next step; new requests join between steps.
// The CLI uses the blocking generate().
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chat/chat_format.h"
#include "engine/gen_params.h"
#include "util/error.h"
#include "engine/model_runner.h"
#include "engine/prefix_cache.h"
#include "engine/request_stream.h"
#include "engine/speculative.h"

namespace qinfer {
class Tokenizer;
class ChatTemplate;
}  // namespace qinfer

namespace qinfer::grammar {
class Compiler;
}

namespace qinfer::engine {

// The prefix cache's default budget: this share of the memory available at start (and
// the share of the room a context lowered to fit leaves for it).
constexpr double kPrefixCacheShare = 0.25;

struct EngineOptions {
  int max_num_seqs = 32;
  int prefill_chunk = 512;        // prompt tokens per step, over all prefilling sequences
  int64_t max_model_len = 0;      // 0: the model's max_context()
  // As vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN: a max_model_len above the model's context
  // is an error unless this is set; then it is lowered to the model's context (the model
  // cannot attend past it) with a warning.
  bool allow_long_max_model_len = false;
  // What may wait in the queue (sequences not yet running): beyond either, submit throws
  // EngineBusy (the server answers 503). Queued sequences hold only their prompt ids; their
  // vocab-sized buffers are made when they start running.
  int max_queued_seqs = 2048;
  int64_t max_queued_tokens = int64_t{1} << 24;  // prompt tokens over all queued sequences
  // Work memory (Engine::work_bytes): what the waiting sequences hold (prompt ids, image
  // patches, mRoPE positions, parameters) may take this many bytes besides what the running
  // sequences are planned to need (KV and state at prompt + max_tokens as the memory plan
  // counts them, vocab-sized buffers) for max_num_seqs sequences of max_model_len tokens.
  // Beyond it submit throws EngineBusy; a sequence that alone holds more is an Error.
  int64_t max_queued_bytes = int64_t{1} << 30;
  RunnerLoadOptions load;
  // Prefix caching (engine/prefix_cache.h; --enable-prefix-caching, on by default as in
  // vLLM V1; off when the runner cannot save state). Budget in GiB (counted by the memory plan); < 0:
  // kPrefixCacheShare of MemAvailable when the engine starts, at most what the running
  // sequences' planned KV/state (not allocated yet then) leave; a context the plan lowers to
  // fit leaves that share of the room. A DeltaNet state snapshot is kept every
  // prefix_snapshot_blocks blocks inside a prompt, besides those at the prompt's end
  // and at the end of the generation.
  bool enable_prefix_caching = true;
  double prefix_cache_gb = -1;
  int prefix_snapshot_blocks = 4;
  SpeculativeOptions spec;        // --speculative-config (engine/speculative.h); needs load.load_mtp
};

// Estimated bytes of one sequence (Engine::work_bytes).
struct WorkBytes {
  int64_t held = 0;      // from submit on: prompt ids, image patches and positions, parameters
  int64_t running = 0;   // once running, in all: held + KV and state + vocab-sized buffers
};

// The queue is full: retry later (HTTP 503), not a bad request.
class EngineBusy : public Error {
 public:
  using Error::Error;
};

struct EngineStats {
  int64_t queued = 0, active = 0;
  int64_t requests_finished = 0, requests_aborted = 0, requests_failed = 0;
  int64_t prompt_tokens = 0, generation_tokens = 0;
  int64_t steps = 0;
  double busy_seconds = 0;        // time spent in forward + sampling
  // Prefix caching, in tokens as vLLM's prefix_cache_queries / prefix_cache_hits: the
  // prompt tokens of each request looked up, and those found cached.
  int64_t prefix_cache_queries = 0, prefix_cache_hits = 0;
  int64_t prefix_cache_bytes = 0, prefix_cache_blocks = 0, prefix_cache_states = 0;
  int64_t prefix_cache_kv_bytes = 0, prefix_cache_state_bytes = 0;   // the two parts of prefix_cache_bytes
  SpecDecodeStats spec;           // speculative decoding counters
  int64_t kv_tokens = 0;          // tokens held in the caches of the running sequences
  // Work memory: running sequences' WorkBytes::running + waiting ones' held, and the budget.
  int64_t work_bytes = 0, work_budget = 0;
};

class Engine {
 public:
  // Loads model, and tokenizer + chat template when the folder has them.
  static std::unique_ptr<Engine> load(const std::string& dir, const EngineOptions& opts);
  // tokenizer / chat template may be null (id-only models). format: the chat format's
  // strings (stop tokens; the server's tool-call and thinking markers), the Qwen3.5 defaults
  // unless the folder's files say otherwise (chat::ChatFormat::load, which load() calls).
  Engine(std::unique_ptr<ModelRunner> model, std::unique_ptr<Tokenizer> tokenizer,
         std::unique_ptr<ChatTemplate> chat_template, const EngineOptions& opts,
         chat::ChatFormat format = chat::ChatFormat());
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request. Throws Error for an empty prompt, ids outside the vocabulary,
  // bad sampling parameters or prompt + max_tokens over max_model_len() (the prompt
  // length after expanding the image placeholders of params.images).
  std::shared_ptr<RequestStream> submit(std::vector<int> prompt, const GenParams& params);

  // Blocking: submits and waits; on_event (optional) sees every event as it arrives
  // and may return false to cancel.
  GenResult generate(const std::vector<int>& prompt, const GenParams& params,
                     const std::function<bool(const GenEvent&)>& on_event = {});

  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const ChatTemplate* chat_template() const { return chat_template_.get(); }
  const chat::ChatFormat& chat_format() const { return format_; }
  bool has_vision() const { return model_->has_vision(); }   // GenParams::images can be served
  int64_t max_model_len() const { return max_model_len_; }
  int vocab_size() const { return vocab_; }
  const std::vector<int>& eos_token_ids() const { return eos_ids_; }
  const EngineOptions& options() const { return opts_; }
  EngineStats stats() const;
  // Structured outputs: the grammar compiler (and cache) over this tokenizer's vocabulary,
  // built on first use; null when the model has no tokenizer.
  grammar::Compiler* grammar_compiler();

  // Validates prompt length + max_tokens against the context; returns the effective
  // max_tokens. Error text follows vLLM ("maximum context length is N tokens").
  // prompt_cut: the prompt's tokenization stopped early (Tokenizer::encode_bounded), so it
  // has at least prompt_tokens tokens.
  int64_t check_context(int64_t prompt_tokens, int64_t max_tokens, bool prompt_cut = false) const;

  // The bytes a sequence of `prompt_tokens` tokens (image placeholders expanded) with
  // `params` holds while it waits and once it runs: an estimate from the sizes of what it
  // keeps, with KV and state from the runner (ModelRunner::sequence_bytes, the memory plan's
  // per-token and per-sequence sizes) for prompt + max_tokens tokens (max_tokens < 0: up to
  // max_model_len).
  WorkBytes work_bytes(int64_t prompt_tokens, const GenParams& params) const;
  // All the work memory queued and running sequences may hold (EngineOptions::max_queued_bytes
  // plus the running sequences' planned share).
  int64_t work_budget() const { return work_budget_; }

  // The max_model_len to serve with: `requested` (0: the model's) checked against the
  // model's context `model_max` (from `source`, for the message) as described at
  // EngineOptions::allow_long_max_model_len. Throws Error naming --max-model-len.
  static int64_t resolve_max_model_len(int64_t requested, int64_t model_max, bool allow_long,
                                       const std::string& source);

 private:
  struct Seq;
  void loop();
  void step(std::vector<std::unique_ptr<Seq>>& active);   // step_batch, then the deferred finishes
  void step_batch(std::vector<std::unique_ptr<Seq>>& active);
  void encode_pending_images(std::vector<std::unique_ptr<Seq>>& active);
  void finish_seq(Seq& s, FinishReason r, const std::string& stop_str = {}, int stop_token = -1,
                  const std::string& error = {});
  bool process_token(Seq& s, const float* logits);
  // Prefix caching (the end of engine.cc).
  void prefix_setup();
  void prefix_admit(Seq& s);                     // new sequence: from the longest cached prefix
  int64_t prefix_cut(const Seq& s) const;        // prefill stops here (a state to save), or INT64_MAX
  void prefix_after_step(Seq& s);                // saves at targeted block edges
  void prefix_at_finish(Seq& s);                 // end of generation
  void prefix_store(Seq& s, int64_t blocks, const SavedState* state);   // null: the state now
  bool emit_token(Seq& s, const TokenOut& info);   // stop checks + streaming; true when s finished
  static const uint64_t* grammar_mask(Seq& s);   // structured-output mask for s's next token, or null
  // Speculation: how many drafts s may verify now, and the batched draft requests of a step.
  SavedState save_state_of(const Seq& s);   // the runner's, + a speculating sequence's draft hidden row
  int draft_room(const Seq& s) const;
  void propose_drafts(std::vector<DraftRequest>& reqs);

  std::unique_ptr<ModelRunner> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> chat_template_;
  chat::ChatFormat format_;
  EngineOptions opts_;
  int vocab_ = 0;
  int64_t max_model_len_ = 0;
  std::vector<int> eos_ids_;
  std::mutex grammar_mu_;
  std::unique_ptr<grammar::Compiler> grammar_compiler_;
  std::unique_ptr<PrefixCache> prefix_;          // null: prefix caching off

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Seq>> queue_;
  bool stop_ = false;
  EngineStats stats_;
  int64_t active_count_ = 0;
  int64_t work_budget_ = 0;
  int64_t running_planned_ = 0;   // of work_budget_: max_num_seqs sequences of max_model_len tokens, running
  int64_t work_in_use_ = 0;           // under mu_: see EngineStats::work_bytes
  DraftSource* drafter_ = nullptr;    // set when speculation is on
  bool draft_rows_ = false;           // drafter_ is the model's MTP head: prefix blocks keep its rows
  // Inside a step, finish_seq defers the streams' final event until the step's counters
  // are in stats_, so a client that reads /metrics after its reply sees its last step.
  struct Finish {
    Seq* seq;
    FinishReason reason;
    std::string stop_str;
    int stop_token;
    std::string error;
  };
  bool in_step_ = false;
  std::vector<Finish> finishes_;
  std::thread thread_;
};

}  // namespace qinfer::engine
