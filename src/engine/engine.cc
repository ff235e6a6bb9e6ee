#include "engine/engine.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <climits>
#include <filesystem>

#include "io/config.h"
#include "jinja/chat_template.h"
#include "engine/prompt_logprobs.h"
#include "engine/seq_sampler.h"
#include "grammar/compiler.h"
#include "grammar/grammar.h"
#include "engine/text_output.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"
#include "vision/mm_prompt.h"
#include "vision/preprocess.h"

namespace qinfer::engine {

struct Engine::Seq {
  std::shared_ptr<RequestStream> stream;
  std::vector<int> prompt;
  GenParams params;
  int64_t max_tokens = 0;
  std::unique_ptr<RunnerSequence> state;
  std::unique_ptr<SeqSampler> sampler;
  std::unique_ptr<TextOutput> text;
  std::unique_ptr<grammar::Matcher> grammar;  // structured outputs (null: unconstrained)
  std::vector<int> stop_ids;          // EOS ids (unless ignore_eos) + stop_token_ids
  int64_t prefilled = 0;
  int64_t generated = 0;
  int next_token = -1;                // decode input of the next step
  std::vector<float> logits;
  int sample_vocab = 0;
  std::vector<float> chunk_logits;    // prompt_logprobs: [chunk][vocab] rows of a prefill chunk
  std::vector<TokenOut> prompt_lp;    // prompt_logprobs gathered so far
  double submit_time = 0;
  bool done = false;
  // Speculative decoding (engine options spec): this request drafts.
  bool spec = false;
  std::vector<int> drafts;            // proposed after the last step, verified in the next
  std::vector<int> run;               // this step's input: [next_token, drafts verified]
  std::vector<float> hidden;          // this step's post-norm hidden rows (the draft head's input)
  int64_t hidden_pos0 = 0;            // the position of hidden's first row
  std::vector<int> context;           // prompt + output so far (for the draft source)
  std::vector<int> draft_next;        // the draft request's next_tokens
  // Rows a failed draft call never delivered (from position unsent_pos0 on; -1: none):
  // the next request starts with them, so the draft source's caches see every row.
  int64_t unsent_pos0 = -1;
  std::vector<int> unsent_next;
  std::vector<float> unsent_hidden;
  int draft_failures = 0;             // in a row; at kMaxDraftFailures the request stops drafting
  // Images: the expanded prompt's mRoPE positions and image token ranges; the tower's
  // output (computed when prefill starts) and one embedding row pointer per prompt token.
  bool has_images = false;
  vision::MmPrompt mm;
  std::vector<float> image_embeds;
  std::vector<const float*> embed_rows;
  PrefixSeq prefix;                   // prefix caching: keys, tokens, saved states
  WorkBytes work;                     // counted in work_in_use_ from submit to finish
  bool admitted = false;              // running: work.running is counted, else work.held
};

namespace {

constexpr int kMaxDraftFailures = 3;
// A request asking for prompt_logprobs prefills this many tokens per step at most, so the
// all-rows logits of a chunk stay small ([16][vocab] floats: 16 MB for Qwen3.5).
constexpr int64_t kPromptLogprobsChunk = 16;
// Work-memory estimate (Engine::work_bytes): a sequence's fixed part (Seq, its stream, text
// output, sampler and grammar matcher objects), a logit_bias entry as a map node and a
// sampler pair, and the sampler's work buffers per vocabulary entry (a float row, a
// candidate list of float + id, a seen-token mask).
constexpr int64_t kSeqFixedBytes = 4096;
constexpr int64_t kLogitBiasEntryBytes = 64;
constexpr int64_t kSamplerBytesPerVocab = 16;

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / double(int64_t{1} << 20));
  return buf;
}

bool has_chat_template(const std::string& dir) {
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(dir) / "chat_template.jinja")) return true;
  return fs::exists(fs::path(dir) / "tokenizer_config.json");
}

}  // namespace

std::unique_ptr<Engine> Engine::load(const std::string& dir, const EngineOptions& opts) {
  namespace fs = std::filesystem;
  // Before the (long) weight load, so a bad --max-model-len fails at once.
  RunnerLoadOptions lo = opts.load;
  lo.max_num_seqs = opts.max_num_seqs;   // the memory plan sizes the KV for these
  if (opts.max_model_len > 0) {
    lo.max_model_len =
        resolve_max_model_len(opts.max_model_len, load_config(dir).text.max_position_embeddings,
                              opts.allow_long_max_model_len, (fs::path(dir) / "config.json").string());
  }
  if (opts.spec.enabled() && !opts.spec.draft_override) {
    lo.load_mtp = true;
    lo.draft_vocab = opts.spec.draft_vocab_size;
    lo.draft_int8 = opts.spec.draft_int8;
    lo.draft_layer_int8 = opts.spec.draft_layer_int8;
  }
  if (opts.enable_prefix_caching) {   // the plan makes room for the prefix cache's budget
    if (opts.prefix_cache_gb >= 0) lo.prefix_cache_bytes = opts.prefix_cache_gb * double(size_t{1} << 30);
    else lo.prefix_cache_share = kPrefixCacheShare;
  }
  auto runner = load_model_runner(dir, lo);
  std::unique_ptr<Tokenizer> tok;
  if (fs::exists(fs::path(dir) / "tokenizer.json")) {
    tok = std::make_unique<Tokenizer>(Tokenizer::load(dir));
  } else {
    log_info("no tokenizer.json in ", dir, ": token ids only (chat and text prompts unavailable)");
  }
  std::unique_ptr<ChatTemplate> tmpl;
  if (tok && has_chat_template(dir)) {
    try {
      tmpl = std::make_unique<ChatTemplate>(ChatTemplate::load(dir));
    } catch (const Error& e) {
      log_warn("no usable chat template in ", dir, ": ", e.what());
    }
  }
  chat::ChatFormat format;
  if (tok) {
    try {
      format = chat::ChatFormat::load(dir);
    } catch (const Error& e) {
      log_warn("chat format of ", dir, ": ", e.what(), "; using the Qwen3.5 defaults");
    }
  }
  return std::make_unique<Engine>(std::move(runner), std::move(tok), std::move(tmpl), opts, std::move(format));
}

Engine::Engine(std::unique_ptr<ModelRunner> model, std::unique_ptr<Tokenizer> tokenizer,
               std::unique_ptr<ChatTemplate> chat_template, const EngineOptions& opts, chat::ChatFormat format)
    : model_(std::move(model)), tokenizer_(std::move(tokenizer)),
      chat_template_(std::move(chat_template)), format_(std::move(format)), opts_(opts) {
  if (opts_.max_num_seqs < 1) fail("max_num_seqs must be >= 1, got ", opts_.max_num_seqs);
  if (opts_.prefill_chunk < 1) fail("prefill_chunk must be >= 1, got ", opts_.prefill_chunk);
  vocab_ = model_->vocab_size();
  max_model_len_ = resolve_max_model_len(opts_.max_model_len, model_->max_context(),
                                         opts_.allow_long_max_model_len, "the model config");
  if (opts_.max_model_len > max_model_len_) {
    log_warn("--max-model-len ", opts_.max_model_len, " is above the model's maximum context (",
             max_model_len_, " tokens) and long lengths are allowed: serving with max_model_len ",
             max_model_len_);
  }
  if (opts_.spec.enabled()) {
    drafter_ = opts_.spec.draft_override ? opts_.spec.draft_override : model_->draft_source();
    if (!drafter_) fail("--speculative-config: the model has no draft head loaded (MTP)");
    draft_rows_ = drafter_ == model_->draft_source();
    if (model_->hidden_size() <= 0) fail("--speculative-config: this model runner does not support speculation");
    stats_.spec.accepted_per_pos.assign(static_cast<size_t>(opts_.spec.num_speculative_tokens), 0);
    log_info("speculative decoding: ", opts_.spec.method, ", ", opts_.spec.num_speculative_tokens,
             " draft tokens per step", opts_.spec.disable_by_batch_size > 0
                 ? cat(", off in steps with ", opts_.spec.disable_by_batch_size, " or more decoding sequences")
                 : std::string());
  }
  eos_ids_ = model_->eos_token_ids();
  if (tokenizer_) {
    for (const std::string& t : format_.stop_tokens()) {
      if (auto id = tokenizer_->token_id(t); id && *id < vocab_) eos_ids_.push_back(*id);
    }
  }
  std::sort(eos_ids_.begin(), eos_ids_.end());
  eos_ids_.erase(std::unique(eos_ids_.begin(), eos_ids_.end()), eos_ids_.end());
  if (opts_.max_queued_bytes < 0) fail("max_queued_bytes must be >= 0, got ", opts_.max_queued_bytes);
  // The running sequences' planned share: max_num_seqs plain sequences of max_model_len tokens.
  GenParams full;
  full.max_tokens = max_model_len_ - 1;
  const WorkBytes one = work_bytes(1, full);
  running_planned_ = static_cast<int64_t>(opts_.max_num_seqs) * (one.running - one.held);
  work_budget_ = opts_.max_queued_bytes + running_planned_;
  stats_.work_budget = work_budget_;
  prefix_setup();   // its default budget is a share of what the work budget leaves
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t Engine::resolve_max_model_len(int64_t requested, int64_t model_max, bool allow_long,
                                      const std::string& source) {
  if (requested < 0) fail("--max-model-len: must be positive, got ", requested);
  if (requested == 0) return model_max;
  if (requested <= model_max) return requested;
  if (!allow_long) {
    fail("--max-model-len ", requested, " is greater than this model's maximum context of ", model_max,
         " tokens (max_position_embeddings in ", source, "); the model cannot attend past it. Use "
         "--max-model-len ", model_max, " or less (or leave it out), or set QINFER_ALLOW_LONG_MAX_MODEL_LEN=1 "
         "(or VLLM_ALLOW_LONG_MAX_MODEL_LEN=1) to start anyway with max_model_len ", model_max, ".");
  }
  return model_max;
}

int64_t Engine::check_context(int64_t prompt_tokens, int64_t max_tokens, bool prompt_cut) const {
  if (prompt_tokens >= max_model_len_ || prompt_cut) {
    fail("This model's maximum context length is ", max_model_len_, " tokens. However, your request has ",
         prompt_cut ? "at least " : "", prompt_tokens, " input tokens. Please reduce the length of the input messages.");
  }
  if (max_tokens < 0) return max_model_len_ - prompt_tokens;
  if (max_tokens > max_model_len_ - prompt_tokens) {  // no prompt + max_tokens: it can overflow
    const std::string total = max_tokens > INT64_MAX - prompt_tokens ? std::string("more than 2^63")
                                                                     : std::to_string(prompt_tokens + max_tokens);
    fail("This model's maximum context length is ", max_model_len_, " tokens. However, you requested ",
         total, " tokens (", prompt_tokens, " in the messages, ", max_tokens,
         " in the completion). Please reduce the length of the messages or completion.");
  }
  return max_tokens;
}

WorkBytes Engine::work_bytes(int64_t prompt_tokens, const GenParams& p) const {
  const int64_t L = std::max<int64_t>(prompt_tokens, 0), V = vocab_;
  const bool images = p.images && !p.images->empty();
  WorkBytes w;
  int64_t held = kSeqFixedBytes + 4 * L;                        // the prompt ids
  if (p.repetition_penalty != 1.0) held += 4 * L;               // the sampler's copy of them
  held += kLogitBiasEntryBytes * static_cast<int64_t>(p.logit_bias.size());
  for (const auto& st : p.stop) held += 2 * (static_cast<int64_t>(st.size()) + 32);   // params + text output
  held += 8 * static_cast<int64_t>(p.stop_token_ids.size() + eos_ids_.size());
  int64_t image_tokens = 0;
  if (images) {
    held += 24 * L;                                             // mRoPE positions, [L][3] int64
    for (const auto& im : *p.images) {
      held += static_cast<int64_t>(sizeof(im) + im.pixel_values.size() * sizeof(float));
      image_tokens += im.merged_tokens(model_->spatial_merge_size());
    }
  }
  w.held = held;
  const int64_t total = p.max_tokens < 0 || p.max_tokens >= max_model_len_ ? max_model_len_
                                                                         : std::min(L + p.max_tokens, max_model_len_);
  const bool spec = drafter_ && p.speculate && !images;
  const int64_t K = spec ? opts_.spec.num_speculative_tokens : 0;
  const int64_t H = std::max<int64_t>(model_->hidden_size(), 0);
  int64_t run = model_->sequence_bytes(std::max<int64_t>(total, 1));   // KV + state
  run += 4 * V * (K + 1) + kSamplerBytesPerVocab * V;         // logits rows, sampler buffers
  if (p.grammar) run += V / 8 + 64;                             // the grammar mask
  if (p.prompt_logprobs >= 0) run += 4 * V * kPromptLogprobsChunk;
  if (prefix_) run += 4 * total + 8 * (total / std::max<int64_t>(prefix_->block_tokens(), 1) + 1);
  if (spec) run += 4 * total + 4 * H * std::max<int64_t>(K + 1, opts_.prefill_chunk);   // context, hidden rows
  if (images) run += 4 * H * image_tokens + 8 * L;              // the tower's output, row pointers
  w.running = held + run;
  return w;
}

std::shared_ptr<RequestStream> Engine::submit(std::vector<int> prompt, const GenParams& params) {
  if (prompt.empty()) fail("prompt: must contain at least one token");
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= vocab_) {
      fail("prompt: token id ", prompt[i], " at position ", i, " is outside the vocabulary [0, ", vocab_, ")");
    }
  }
  if (params.max_tokens == 0) fail("max_tokens: must be at least 1");
  vision::MmPrompt mm;
  const bool has_images = params.images && !params.images->empty();
  if (has_images) {
    if (!model_->has_vision()) {
      fail("images: this model has no vision tower loaded (the checkpoint has none, or image input is off: "
           "--limit-mm-per-prompt '{\"image\": 0}'); send text only");
    }
    std::vector<vision::ImageGrid> grids;
    for (const auto& im : *params.images) grids.push_back({im.grid_t, im.grid_h, im.grid_w});
    mm = vision::expand_image_prompt(prompt, grids, model_->image_token_id(), model_->spatial_merge_size());
    prompt = mm.ids;
  } else if (model_->has_vision() && model_->image_token_id() >= 0 &&
             std::find(prompt.begin(), prompt.end(), model_->image_token_id()) != prompt.end()) {
    fail("prompt: holds the image token id ", model_->image_token_id(), " but the request has no image");
  }
  if (params.logprobs > 20) fail("logprobs: at most 20 top logprobs, got ", params.logprobs);
  if (params.prompt_logprobs > 20) fail("prompt_logprobs: at most 20, got ", params.prompt_logprobs);
  auto s = std::make_unique<Seq>();
  s->max_tokens = check_context(static_cast<int64_t>(prompt.size()), params.max_tokens);
  // Never sample ids the tokenizer cannot decode when the model's rows are padded.
  int sample_vocab = vocab_;
  if (tokenizer_ && tokenizer_->vocab_size() < vocab_ && tokenizer_->vocab_size() > 0) {
    // Only mask padding rows when the tokenizer covers most of the model's vocabulary
    // (a real checkpoint); tiny id-only test models keep their whole vocabulary.
    if (tokenizer_->vocab_size() * 2 > vocab_) sample_vocab = tokenizer_->vocab_size();
  }
  s->sampler = std::make_unique<SeqSampler>(params, prompt, sample_vocab);
  s->sample_vocab = sample_vocab;
  if (!params.stop.empty() && !tokenizer_) fail("stop: stop strings need a tokenizer; this model has none");
  s->text = std::make_unique<TextOutput>(tokenizer_.get(), params.skip_special_tokens, params.stop,
                                         params.include_stop_str_in_output);
  if (!params.ignore_eos) s->stop_ids = eos_ids_;
  for (int id : params.stop_token_ids) {
    if (id < 0 || id >= vocab_) fail("stop_token_ids: id ", id, " is outside the vocabulary");
    s->stop_ids.push_back(id);
  }
  if (params.grammar) {
    s->grammar = std::make_unique<grammar::Matcher>(params.grammar, s->stop_ids, sample_vocab,
                                                    params.grammar_start_after);
  }
  s->params = params;
  s->work = work_bytes(static_cast<int64_t>(prompt.size()), params);
  if (s->work.held > opts_.max_queued_bytes || s->work.running > work_budget_) {
    fail("prompt: this sequence would hold about ", mib(s->work.held), " while waiting and ", mib(s->work.running),
         " while running (prompt ids, images, parameters; KV and state for ", s->max_tokens, " tokens after its ",
         prompt.size(), " prompt tokens); the server holds at most ", mib(opts_.max_queued_bytes),
         " of waiting work and ", mib(work_budget_), " in all");
  }
  // Image requests decode without drafts: the MTP head's rotary positions are text positions.
  s->spec = drafter_ != nullptr && params.speculate && !has_images;
  s->submit_time = now_seconds();
  s->stream = std::make_shared<RequestStream>(static_cast<int64_t>(prompt.size()));
  s->prompt = std::move(prompt);
  if (has_images) {
    s->has_images = true;
    s->mm = std::move(mm);
    for (size_t i = 0; i < params.images->size() && i < s->mm.image_ranges.size(); ++i) {
      const auto& im = (*params.images)[i];
      s->prefix.images.push_back({s->mm.image_ranges[i].first, s->mm.image_ranges[i].second,
                                  image_content_hash(im.grid_t, im.grid_h, im.grid_w, im.pixel_values)});
    }
  }
  auto stream = s->stream;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_) fail("engine is shutting down");
    int64_t queued_tokens = static_cast<int64_t>(s->prompt.size());
    for (const auto& q : queue_) queued_tokens += static_cast<int64_t>(q->prompt.size());
    if (static_cast<int64_t>(queue_.size()) >= opts_.max_queued_seqs || queued_tokens > opts_.max_queued_tokens) {
      throw EngineBusy(cat("the server is overloaded: ", queue_.size(), " sequences (", queued_tokens - static_cast<int64_t>(s->prompt.size()),
                           " prompt tokens) are already waiting; limits are ", opts_.max_queued_seqs, " sequences and ",
                           opts_.max_queued_tokens, " tokens. Retry later."));
    }
    if (work_in_use_ + s->work.held > work_budget_) {
      throw EngineBusy(cat("the server is overloaded: queued and running requests hold about ", mib(work_in_use_),
                           " and this sequence needs ", mib(s->work.held), " more; the work-memory budget is ",
                           mib(work_budget_), ". Retry later."));
    }
    work_in_use_ += s->work.held;
    stats_.work_bytes = work_in_use_;
    queue_.push_back(std::move(s));
    stats_.queued = static_cast<int64_t>(queue_.size());
  }
  cv_.notify_all();
  return stream;
}

GenResult Engine::generate(const std::vector<int>& prompt, const GenParams& params,
                           const std::function<bool(const GenEvent&)>& on_event) {
  auto stream = submit(prompt, params);
  GenResult r;
  GenEvent ev;
  while (true) {
    if (!stream->take(ev, 0.5)) continue;
    for (const auto& t : ev.tokens) {
      r.tokens.push_back(t.token);
      r.token_info.push_back(t);
    }
    r.text += ev.text;
    r.prompt_tokens = ev.prompt_tokens;   // the expanded length when there are images
    r.cached_tokens = ev.cached_tokens;
    r.completion_tokens = ev.completion_tokens;
    if (ev.time_to_first_token >= 0) r.time_to_first_token = ev.time_to_first_token;
    if (on_event && !on_event(ev)) stream->cancel();
    if (ev.finished) {
      r.reason = ev.reason;
      r.stop_str = ev.stop_str;
      r.stop_token = ev.stop_token;
      r.error = ev.error;
      return r;
    }
  }
}

grammar::Compiler* Engine::grammar_compiler() {
  if (!tokenizer_) return nullptr;
  std::lock_guard<std::mutex> lk(grammar_mu_);
  if (!grammar_compiler_) {
    grammar_compiler_ = std::make_unique<grammar::Compiler>(grammar::TokenVocab::from_tokenizer(*tokenizer_));
  }
  return grammar_compiler_.get();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  EngineStats s = stats_;
  s.queued = static_cast<int64_t>(queue_.size());
  s.active = active_count_;
  return s;
}

void Engine::finish_seq(Seq& s, FinishReason r, const std::string& stop_str, int stop_token,
                        const std::string& error) {
  if (s.done) return;
  s.done = true;
  if (r != FinishReason::kError) prefix_at_finish(s);
  s.state.reset();  // frees the caches now
  {
    std::lock_guard<std::mutex> lk(mu_);
    work_in_use_ -= s.admitted ? s.work.running : s.work.held;
    stats_.work_bytes = work_in_use_;
    if (r == FinishReason::kAbort) ++stats_.requests_aborted;
    else if (r == FinishReason::kError) ++stats_.requests_failed;
    else ++stats_.requests_finished;
  }
  if (in_step_) finishes_.push_back({&s, r, stop_str, stop_token, error});
  else s.stream->finish(r, stop_str, stop_token, error);
}

// Called by loop() once per iteration that has active sequences (the scheduler thread only);
// runs after loop() admitted queued requests and dropped cancelled ones. Runs step_batch and
// then, even when it throws, delivers the finishes it deferred (finish_seq while in_step_),
// so no stream sees its end before the step's other tokens are pushed.
void Engine::step(std::vector<std::unique_ptr<Seq>>& active) {
  struct Flush {   // also when step_batch throws
    Engine* e;
    ~Flush() {
      e->in_step_ = false;
      for (auto& f : e->finishes_) f.seq->stream->finish(f.reason, f.stop_str, f.stop_token, f.error);
      e->finishes_.clear();
    }
  } flush{this};
  in_step_ = true;
  step_batch(active);
}

// The scheduler thread's body: started by the constructor, ended by the destructor (stop_).
// Each iteration waits for work, aborts cancelled requests, moves queued ones (submit) into
// the active set up to max_num_seqs, publishes the counters stats() reads, then runs one
// step() over every active sequence and drops those that finished in it.
void Engine::loop() {
  std::vector<std::unique_ptr<Seq>> active;
  while (true) {
    std::vector<std::unique_ptr<Seq>> dropped;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !queue_.empty() || !active.empty(); });
      if (stop_) {
        for (auto& s : queue_) dropped.push_back(std::move(s));
        queue_.clear();
        for (auto& s : active) dropped.push_back(std::move(s));
        active.clear();
      } else {
        for (auto it = queue_.begin(); it != queue_.end();) {
          if ((*it)->stream->cancelled()) {
            dropped.push_back(std::move(*it));
            it = queue_.erase(it);
          } else {
            ++it;
          }
        }
        while (static_cast<int>(active.size()) < opts_.max_num_seqs && !queue_.empty()) {
          Seq& q = *queue_.front();
          q.admitted = true;   // from now on it may hold its KV and vocab-sized buffers
          work_in_use_ += q.work.running - q.work.held;
          stats_.work_bytes = work_in_use_;
          active.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
    }
    for (auto& s : dropped) finish_seq(*s, FinishReason::kAbort);
    for (auto& s : active) {
      if (s->stream->cancelled()) finish_seq(*s, FinishReason::kAbort);
    }
    active.erase(std::remove_if(active.begin(), active.end(), [](const auto& s) { return s->done; }),
                 active.end());
    {
      std::lock_guard<std::mutex> lk(mu_);
      active_count_ = static_cast<int64_t>(active.size());
      stats_.kv_tokens = 0;
      for (const auto& s : active) stats_.kv_tokens += s->prefilled + s->generated;
      if (stop_) break;
    }
    if (active.empty()) continue;
    step(active);
    active.erase(std::remove_if(active.begin(), active.end(), [](const auto& s) { return s->done; }),
                 active.end());
  }
  std::lock_guard<std::mutex> lk(mu_);
  active_count_ = 0;
}

int Engine::draft_room(const Seq& s) const {
  // The verify run writes positions n .. n+k (n = the next input's position) and emits
  // up to k+1 tokens: stay inside max_tokens and max_model_len.
  const int64_t n = static_cast<int64_t>(s.prompt.size()) + s.generated - 1;
  int64_t room = std::min<int64_t>(s.max_tokens - s.generated - 1, max_model_len_ - n - 2);
  room = std::min<int64_t>(room, static_cast<int64_t>(s.drafts.size()));
  // Prefix caching: the run never crosses a block edge (the state is saved exactly there).
  if (prefix_) room = std::min<int64_t>(room, (n / prefix_->block_tokens() + 1) * prefix_->block_tokens() - n - 1);
  return static_cast<int>(std::max<int64_t>(room, 0));
}

void Engine::propose_drafts(std::vector<DraftRequest>& reqs) {
  if (reqs.empty()) return;
  drafter_->propose(reqs);
}

void Engine::step_batch(std::vector<std::unique_ptr<Seq>>& active) {
  double t0 = now_seconds();
  std::vector<RunnerStep> steps;
  std::vector<Seq*> owners;
  std::vector<char> samples;  // whether the step's last token gets sampled
  steps.reserve(active.size());
  const int K = opts_.spec.num_speculative_tokens;
  const int64_t H = drafter_ ? model_->hidden_size() : 0;
  for (auto& s : active) {
    if (!s->state) {
      prefix_admit(*s);   // a new sequence, or one resumed from the longest cached prefix
      s->logits.assign(static_cast<size_t>(vocab_) * (s->spec ? K + 1 : 1), 0.f);
      if (s->spec) s->context = s->prompt;
    }
  }
  encode_pending_images(active);
  // Speculation is off in this step when the batch is large (vLLM's disable_by_batch_size).
  int64_t decoding = 0;
  for (auto& s : active) decoding += s->prefilled >= static_cast<int64_t>(s->prompt.size());
  const bool drafting = drafter_ && (opts_.spec.disable_by_batch_size <= 0 ||
                                     decoding < opts_.spec.disable_by_batch_size);
  // Decoding sequences first: one token each, or the next token and its drafts.
  for (auto& s : active) {
    if (s->done || s->prefilled < static_cast<int64_t>(s->prompt.size())) continue;
    if (s->spec) {
      const int k = drafting ? draft_room(*s) : 0;
      s->run.assign(1, s->next_token);
      s->run.insert(s->run.end(), s->drafts.begin(), s->drafts.begin() + k);
      s->hidden.resize(static_cast<size_t>((k + 1) * H));
      RunnerStep st{s->state.get(), s->run.data(), k + 1, s->logits.data()};
      st.all_logits = true;
      st.hidden = s->hidden.data();
      st.keep_states = k > 0;
      steps.push_back(st);
    } else {
      steps.push_back({s->state.get(), &s->next_token, 1, s->logits.data()});
      if (s->has_images) steps.back().rope_delta = s->mm.rope_delta;
    }
    owners.push_back(s.get());
    samples.push_back(1);
  }
  // Prefill chunks, oldest request first, within the per-step budget.
  int64_t budget = opts_.prefill_chunk;
  int64_t prefill_tokens = 0;
  for (auto& s : active) {
    int64_t remain = static_cast<int64_t>(s->prompt.size()) - s->prefilled;
    if (remain <= 0 || s->done) continue;
    if (budget <= 0) break;
    int64_t n = std::min({remain, budget, prefix_cut(*s) - s->prefilled});
    RunnerStep st{s->state.get(), s->prompt.data() + s->prefilled, n, s->logits.data()};
    if (s->params.prompt_logprobs >= 0) {
      n = std::min(n, kPromptLogprobsChunk);
      s->chunk_logits.resize(static_cast<size_t>(n) * static_cast<size_t>(vocab_));
      st = {s->state.get(), s->prompt.data() + s->prefilled, n, s->chunk_logits.data(), true};
    }
    if (s->spec) {
      s->hidden.resize(static_cast<size_t>(n * H));
      st.hidden = s->hidden.data();
    }
    if (s->has_images) {
      st.embed_rows = s->embed_rows.data() + s->prefilled;
      st.mrope_pos = s->mm.positions.data() + s->prefilled * 3;
    }
    steps.push_back(st);
    owners.push_back(s.get());
    samples.push_back(n == remain);
    budget -= n;
    prefill_tokens += n;
  }
  if (steps.empty()) return;   // every sequence failed before its forward (image errors)
  std::vector<char> ok(steps.size(), 1);
  try {
    model_->forward(steps);
  } catch (const std::exception& e) {
    // The model checks its input before touching any state, so the steps can be
    // retried one by one to fail only the sequence at fault.
    log_warn("batched forward of ", steps.size(), " sequences failed (", e.what(), "); retrying one by one");
    for (size_t i = 0; i < steps.size(); ++i) {
      try {
        model_->forward({steps[i]});
      } catch (const std::exception& e1) {
        ok[i] = 0;
        finish_seq(*owners[i], FinishReason::kError, {}, -1, e1.what());
      }
    }
  }
  int64_t generated = 0;
  SpecDecodeStats spec;
  spec.accepted_per_pos.assign(static_cast<size_t>(K), 0);
  std::vector<DraftRequest> reqs;
  std::vector<Seq*> req_owner;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!ok[i]) continue;
    Seq& s = *owners[i];
    const bool prefill = s.prefilled < static_cast<int64_t>(s.prompt.size());
    const int64_t pos0 = prefill ? s.prefilled : static_cast<int64_t>(s.prompt.size()) + s.generated - 1;
    if (prefill) {
      if (steps[i].all_logits) {
        try {
          // Row j predicts prompt token prefilled + j + 1; the chunk's last row is the
          // sampling row when the chunk ends the prompt.
          for (int64_t j = 0; j < steps[i].n_tokens; ++j) {
            int64_t next = s.prefilled + j + 1;
            const float* row = s.chunk_logits.data() + static_cast<size_t>(j) * static_cast<size_t>(vocab_);
            if (next < static_cast<int64_t>(s.prompt.size())) {
              s.prompt_lp.push_back(prompt_token_logprob(row, s.sample_vocab, s.prompt[static_cast<size_t>(next)],
                                                         s.params.prompt_logprobs));
            } else {
              std::copy(row, row + vocab_, s.logits.begin());
            }
          }
        } catch (const std::exception& e) {
          finish_seq(s, FinishReason::kError, {}, -1, e.what());
          continue;
        }
      }
      s.prefilled += steps[i].n_tokens;
      if (s.prefilled >= static_cast<int64_t>(s.prompt.size())) std::vector<float>().swap(s.chunk_logits);
    }
    if (s.done) continue;
    if (!s.spec) {
      // Before sampling: a token that ends the request saves the state at once.
      prefix_after_step(s);
      if (!samples[i]) continue;
      try {
        process_token(s, s.logits.data());
        ++generated;
      } catch (const std::exception& e) {
        finish_seq(s, FinishReason::kError, {}, -1, e.what());
      }
      continue;
    }
    try {
      DraftRequest q;
      q.seq = s.state.get();
      q.pos0 = pos0;
      q.hidden = s.hidden.data();
      s.hidden_pos0 = pos0;
      s.draft_next.clear();
      if (prefill) {
        const int64_t end = s.prefilled;   // rows pos0 .. end-1: the next token of each is the prompt's
        s.draft_next.assign(s.prompt.begin() + pos0 + 1, s.prompt.begin() + std::min<int64_t>(end + 1, s.prompt.size()));
        if (samples[i]) {
          const bool finished = process_token(s, s.logits.data());
          ++generated;
          if (finished) continue;
          s.draft_next.push_back(s.next_token);
          s.context.push_back(s.next_token);
        }
      } else {
        // Verify: row t was fed run[t]; the draft run[t+1] is checked against row t.
        const int k = static_cast<int>(steps[i].n_tokens) - 1;
        int accepted = 0;
        bool finished = false;
        for (int t = 0; t <= k && !finished; ++t) {
          TokenOut info;
          bool acc = false;
          const int draft = t < k ? s.run[t + 1] : -1;
          info.token = s.sampler->sample_draft(s.logits.data() + static_cast<size_t>(t) * vocab_, draft, &info, &acc,
                                                grammar_mask(s));
          ++generated;
          finished = emit_token(s, info);
          if (!finished) s.context.push_back(info.token);
          if (t < k && acc) {
            ++accepted;
            ++spec.accepted_per_pos[t];
          } else {
            break;
          }
        }
        if (k > 0) {
          ++spec.num_drafts;
          spec.num_draft_tokens += k;
          spec.num_accepted_tokens += accepted;
        }
        if (finished) continue;
        if (k > 0) model_->rollback(s.state.get(), accepted + 1);
        s.draft_next.assign(s.run.begin() + 1, s.run.begin() + 1 + accepted);
        s.draft_next.push_back(s.next_token);
      }
      q.next_tokens = s.draft_next.data();
      q.n = static_cast<int64_t>(s.draft_next.size());
      if (s.unsent_pos0 >= 0) {   // the rows of a failed draft call come first
        s.unsent_next.insert(s.unsent_next.end(), q.next_tokens, q.next_tokens + q.n);
        s.unsent_hidden.insert(s.unsent_hidden.end(), q.hidden, q.hidden + q.n * H);
        q.pos0 = s.unsent_pos0;
        q.next_tokens = s.unsent_next.data();
        q.hidden = s.unsent_hidden.data();
        q.n = static_cast<int64_t>(s.unsent_next.size());
      }
      q.k = drafting && s.prefilled >= static_cast<int64_t>(s.prompt.size()) ? K : 0;
      q.context = &s.context;
      s.drafts.clear();
      reqs.push_back(std::move(q));
      req_owner.push_back(&s);
    } catch (const std::exception& e) {
      finish_seq(s, FinishReason::kError, {}, -1, e.what());
    }
  }
  try {
    propose_drafts(reqs);
    for (size_t r = 0; r < reqs.size(); ++r) {
      Seq& s = *req_owner[r];
      s.drafts = std::move(reqs[r].drafts);
      s.unsent_pos0 = -1;
      s.unsent_next.clear();
      s.unsent_hidden.clear();
      s.draft_failures = 0;
      prefix_after_step(s);   // now that the draft head's cache holds the step's rows
    }
  } catch (const std::exception& e) {
    // A failing draft source costs speed, never output: those sequences decode without
    // drafts, and their rows go to the source with the next request. After
    // kMaxDraftFailures failures in a row a request stops speculating.
    log_warn("drafting failed (", e.what(), "); continuing without drafts this step");
    for (size_t r = 0; r < reqs.size(); ++r) {
      Seq& s = *req_owner[r];
      s.drafts.clear();
      if (s.unsent_pos0 < 0) {
        const DraftRequest& q = reqs[r];
        s.unsent_pos0 = q.pos0;
        s.unsent_next.assign(q.next_tokens, q.next_tokens + q.n);
        s.unsent_hidden.assign(q.hidden, q.hidden + q.n * H);
      }
      if (++s.draft_failures >= kMaxDraftFailures) {
        s.spec = false;
        log_warn("request stops speculating after ", kMaxDraftFailures, " failed draft calls in a row");
      }
    }
  }
  std::lock_guard<std::mutex> lk(mu_);
  ++stats_.steps;
  stats_.prompt_tokens += prefill_tokens;
  stats_.generation_tokens += generated;
  stats_.busy_seconds += now_seconds() - t0;
  if (prefix_) {
    const PrefixCacheStats ps = prefix_->stats();
    stats_.prefix_cache_bytes = static_cast<int64_t>(ps.bytes);
    stats_.prefix_cache_blocks = ps.entries;
    stats_.prefix_cache_states = ps.states;
    stats_.prefix_cache_kv_bytes = static_cast<int64_t>(ps.kv_bytes);
    stats_.prefix_cache_state_bytes = static_cast<int64_t>(ps.state_bytes);
  }
  stats_.spec.num_drafts += spec.num_drafts;
  stats_.spec.num_draft_tokens += spec.num_draft_tokens;
  stats_.spec.num_accepted_tokens += spec.num_accepted_tokens;
  for (size_t p = 0; p < spec.accepted_per_pos.size() && p < stats_.spec.accepted_per_pos.size(); ++p)
    stats_.spec.accepted_per_pos[p] += spec.accepted_per_pos[p];
}

void Engine::encode_pending_images(std::vector<std::unique_ptr<Seq>>& active) {
  // Each image sequence runs the tower once, before its first prefill chunk. The
  // preprocessed patches are dropped afterwards (the embeddings are all prefill needs).
  for (auto& s : active) {
    if (!s->has_images || s->done || !s->embed_rows.empty()) continue;
    if (s->prefilled >= s->mm.image_ranges.back().second) {   // every image inside the cached prefix
      s->embed_rows.assign(s->prompt.size(), nullptr);
      s->params.images.reset();
      continue;
    }
    try {
      std::vector<const vision::ImagePatches*> ptrs;
      for (const auto& im : *s->params.images) ptrs.push_back(&im);
      s->image_embeds = model_->encode_images(ptrs);
      const int64_t H = model_->hidden_size();
      int64_t want = 0;
      for (auto [b, e] : s->mm.image_ranges) want += e - b;
      if (static_cast<int64_t>(s->image_embeds.size()) != want * H) {
        fail("vision tower returned ", s->image_embeds.size(), " values for ", want, " image tokens of width ", H);
      }
      s->embed_rows.assign(s->prompt.size(), nullptr);
      int64_t k = 0;
      for (auto [b, e] : s->mm.image_ranges)
        for (int64_t t = b; t < e; ++t) s->embed_rows[t] = s->image_embeds.data() + (k++) * H;
      s->params.images.reset();
    } catch (const std::exception& e) {
      finish_seq(*s, FinishReason::kError, {}, -1, std::string("images: ") + e.what());
    }
  }
}

// ---- prefix caching (engine/prefix_cache.h) ----

void Engine::prefix_setup() {
  if (!opts_.enable_prefix_caching) return;
  const int64_t B = model_->prefix_block_tokens();
  if (B <= 0) return;   // a runner that cannot save state (test fakes)
  if (opts_.prefix_snapshot_blocks < 1) fail("prefix_snapshot_blocks must be >= 1, got ", opts_.prefix_snapshot_blocks);
  size_t budget;
  if (opts_.prefix_cache_gb >= 0) {
    budget = static_cast<size_t>(opts_.prefix_cache_gb * double(size_t{1} << 30));
  } else {
    // A quarter of what is available, but never the running sequences' planned KV/state
    // (not allocated yet at start-up; a context lowered to fit left room for this).
    const size_t avail = mem_available_bytes();
    const size_t planned = static_cast<size_t>(std::max<int64_t>(0, running_planned_));
    budget = avail > 0 ? std::min<size_t>(static_cast<size_t>(avail * kPrefixCacheShare), avail > planned ? avail - planned : 0)
                       : size_t{4} << 30;
  }
  prefix_ = std::make_unique<PrefixCache>(budget, B);
  if (budget == 0 && opts_.prefix_cache_gb < 0)
    log_warn("prefix caching: no memory is left for cached prefixes once the running sequences' planned KV/state is set "
             "aside; a shorter --max-model-len or fewer --max-num-seqs leave room, or --prefix-cache-gb sets a budget");
  auto mib = [](double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / double(size_t{1} << 20));
    return std::string(buf);
  };
  log_info("prefix caching: budget ", mib(static_cast<double>(budget)),
           opts_.prefix_cache_gb >= 0 ? ""
                                      : cat(" (a quarter of the available memory, at most what the ",
                                            mib(static_cast<double>(running_planned_)),
                                            " planned for the running sequences leave; --prefix-cache-gb sets it)"), "; per ", B,
           "-token block ", mib(static_cast<double>(model_->saved_block_bytes(drafter_ != nullptr))),
           " of attention KV, per DeltaNet state snapshot ", mib(static_cast<double>(model_->saved_state_bytes())));
}

void Engine::prefix_admit(Seq& s) {
  const int64_t len = static_cast<int64_t>(s.prompt.size());
  if (!prefix_) {
    s.state = model_->new_sequence();
    return;
  }
  const int64_t B = prefix_->block_tokens();
  PrefixSeq& p = s.prefix;
  // Speculating sequences keep a chain of their own: blocks with the MTP head's rows and
  // states with the hidden row the MTP needs to go on (see prefix_store).
  if (s.spec) p.salt = kDraftRowsSalt;
  p.tokens = s.prompt;
  p.extend_keys(len, B);
  // At least one prompt token is computed: its logits give the first sampled token. A
  // request for prompt_logprobs needs every prompt position's logits: it is not resumed
  // (as in vLLM), though it still saves its prefix for others.
  const int64_t max_blocks = s.params.prompt_logprobs >= 0 ? 0 : (len - 1) / B;
  PrefixCache::Hit hit = prefix_->lookup(p.keys, p.extras, p.tokens.data(), max_blocks);
  if (hit.blocks > 0) {
    try {
      if (s.spec && (!hit.state.draft_hidden || static_cast<int64_t>(hit.state.draft_hidden->size()) != model_->hidden_size()))
        fail("the snapshot has no draft hidden row");
      s.state = model_->restore(hit.kv, hit.state);
      s.prefilled = p.cached = p.state_saved_at = hit.blocks * B;
      if (s.spec) {
        // The draft head's cache row cached-1 depends on token `cached`: it is recomputed
        // with the next draft request, which starts with that row.
        s.unsent_pos0 = p.cached - 1;
        s.unsent_next.assign(1, s.prompt[static_cast<size_t>(p.cached)]);
        s.unsent_hidden = *hit.state.draft_hidden;
      }
    } catch (const std::exception& e) {
      log_warn("prefix cache: restoring ", hit.blocks * B, " tokens failed (", e.what(), "); prefilling in full");
      s.state.reset();
      s.prefilled = p.cached = p.state_saved_at = 0;
      s.unsent_pos0 = -1;
      s.unsent_next.clear();
      s.unsent_hidden.clear();
    }
  }
  if (!s.state) s.state = model_->new_sequence();
  s.stream->set_cached_tokens(p.cached);
  log_info("prefix cache: ", p.cached, " of ", len, " prompt tokens cached");
  std::lock_guard<std::mutex> lk(mu_);
  stats_.prefix_cache_queries += len;
  stats_.prefix_cache_hits += p.cached;
}

namespace {
// The block edges of a prompt of `len` tokens where its state is saved (besides every
// prefix_snapshot_blocks blocks): the last edge of the prompt (a completion continued
// after it resumes there), the last edge before its last token (the same prompt sent
// again: one token must be computed for the logits), and the last edge before the chat
// template's generation prompt tail. A chat's next turn re-renders this turn's history
// without its `<think>` part (Qwen3 drops it before the last user message, and drops
// the empty `<think>\n\n</think>\n\n` of thinking off too): the turns share the
// prompt up to `<|im_start|>assistant\n`, up to 4 tokens before its end.
constexpr int64_t kGenerationPromptTail = 8;
std::array<int64_t, 3> prompt_edges(int64_t len, int64_t B) {
  return {len / B * B, (len - 1) / B * B, std::max<int64_t>(len - kGenerationPromptTail, 0) / B * B};
}
}  // namespace

int64_t Engine::prefix_cut(const Seq& s) const {
  if (!prefix_) return INT64_MAX;
  // The prefill stops at each edge where a state is saved, so the state there exists.
  const int64_t B = prefix_->block_tokens();
  const int64_t every = B * opts_.prefix_snapshot_blocks;
  int64_t cut = (s.prefilled / every + 1) * every;
  for (int64_t t : prompt_edges(static_cast<int64_t>(s.prompt.size()), B))
    if (t > s.prefilled) cut = std::min(cut, t);
  return cut;
}

void Engine::prefix_after_step(Seq& s) {
  if (!prefix_ || s.done || !s.state) return;
  const int64_t B = prefix_->block_tokens(), len = static_cast<int64_t>(s.prompt.size());
  try {
    const int64_t pos = model_->sequence_tokens(*s.state);
    if (pos % B != 0 || pos <= s.prefix.state_saved_at || pos > static_cast<int64_t>(s.prefix.tokens.size())) return;
    const bool every = pos % (B * opts_.prefix_snapshot_blocks) == 0;
    if (pos <= len) {
      // Prefill: the chunk ended on an edge; save it if it is one prefix_cut aimed at.
      const auto edges = prompt_edges(len, B);
      if (every || std::find(edges.begin(), edges.end(), pos) != edges.end()) prefix_store(s, pos / B, nullptr);
    } else if (every) {
      prefix_store(s, pos / B, nullptr);
      s.prefix.pending = {};
    } else {
      s.prefix.pending = save_state_of(s);   // saved if the generation ends before the next edge
    }
  } catch (const std::exception& e) {
    log_warn("prefix cache: saving failed (", e.what(), "); the request goes on uncached");
  }
}

void Engine::prefix_at_finish(Seq& s) {
  if (!prefix_ || !s.state || !s.prefix.pending.data) return;
  try {
    if (s.prefix.pending.position > s.prefix.state_saved_at) {
      prefix_store(s, s.prefix.pending.position / prefix_->block_tokens(), &s.prefix.pending);
    }
  } catch (const std::exception& e) {
    log_warn("prefix cache: saving failed (", e.what(), ")");
  }
  s.prefix.pending = {};
}

void Engine::prefix_store(Seq& s, int64_t blocks, const SavedState* state) {
  // Blocks 0..blocks-1 (those missing) and the state at their end: `state`, or, when
  // null, the sequence's own (it stands at that edge now), copied only if not cached.
  PrefixSeq& p = s.prefix;
  p.extend_keys(blocks * prefix_->block_tokens(), prefix_->block_tokens());
  for (int64_t b = 0; b < blocks; ++b) {
    if (prefix_->has_block(p.keys, p.extras, p.tokens.data(), b)) continue;
    // No room (everything in use) or a key collision: this chain stops here.
    if (!prefix_->insert_block(p.keys, p.extras, p.tokens.data(), b, model_->save_block(*s.state, b, s.spec && draft_rows_)))
      return;
  }
  prefix_->touch_chain(p.keys, blocks);
  const BlockKey last = p.keys[blocks - 1];
  if (prefix_->has_state(last) || prefix_->insert_state(last, state ? *state : save_state_of(s))) {
    p.state_saved_at = blocks * prefix_->block_tokens();
  }
}

SavedState Engine::save_state_of(const Seq& s) {
  SavedState st = model_->save_state(*s.state);
  if (s.spec) {   // with the hidden row before the edge (this step's row st.position-1)
    const int64_t H = model_->hidden_size(), row = st.position - 1 - s.hidden_pos0;
    if (row < 0 || (row + 1) * H > static_cast<int64_t>(s.hidden.size()))
      fail("no hidden row for position ", st.position - 1, " (this step's rows start at ", s.hidden_pos0, ")");
    st.draft_hidden = std::make_shared<const std::vector<float>>(s.hidden.begin() + row * H, s.hidden.begin() + (row + 1) * H);
    st.bytes += static_cast<size_t>(H) * sizeof(float);
  }
  return st;
}

// Called by step_batch for a non-speculating sequence whose step ended on a row to sample
// (decode, or the last prefill chunk), and for a speculating one after its prefill; runs after
// the forward pass filled `logits` and prefix_after_step saved any block-edge state. Samples
// the next token (under the grammar's mask) and hands it to emit_token; true when s finished.
bool Engine::process_token(Seq& s, const float* logits) {
  TokenOut info;
  info.token = s.sampler->sample(logits, &info, grammar_mask(s));
  return emit_token(s, info);
}

// The structured-output mask for the next token of s (nullptr without an active grammar).
// Verification calls it before each token it checks: emit_token has advanced the grammar
// through the tokens accepted before it, so the mask is the one plain decoding would use.
const uint64_t* Engine::grammar_mask(Seq& s) {
  if (!s.grammar || !s.grammar->active()) return nullptr;
  return s.grammar->mask(s.generated + 1 > s.params.min_tokens);
}

bool Engine::emit_token(Seq& s, const TokenOut& info) {
  const int tok = info.token;
  if (prefix_) s.prefix.tokens.push_back(tok);
  ++s.generated;
  if (s.generated == 1) {
    s.stream->set_first_token_time(now_seconds() - s.submit_time);
    if (s.params.prompt_logprobs >= 0) s.stream->set_prompt_logprobs(std::move(s.prompt_lp));
  }
  bool stop_id = s.generated > s.params.min_tokens &&
                 std::find(s.stop_ids.begin(), s.stop_ids.end(), tok) != s.stop_ids.end();
  if (stop_id) {
    s.stream->push_token(info, s.text->flush(), s.generated);
    finish_seq(s, FinishReason::kStop, {}, tok);
    return true;
  }
  if (s.grammar && !s.grammar->accept(tok)) {
    fail("structured output: sampled token ", tok, " does not fit the grammar");
  }
  bool stopped = false;
  std::string stop_str;
  std::string text = s.text->push(tok, &stopped, &stop_str);
  s.stream->push_token(info, text, s.generated);
  if (stopped) {
    finish_seq(s, FinishReason::kStop, stop_str);
    return true;
  }
  if (s.grammar && s.grammar->terminated()) {  // complete, nothing more can follow
    s.stream->push_text(s.text->flush());
    finish_seq(s, FinishReason::kStop);
    return true;
  }
  if (s.generated >= s.max_tokens ||
      static_cast<int64_t>(s.prompt.size()) + s.generated >= max_model_len_) {
    s.stream->push_text(s.text->flush());
    finish_seq(s, FinishReason::kLength);
    return true;
  }
  s.next_token = tok;
  return false;
}

}  // namespace qinfer::engine
