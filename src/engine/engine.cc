#include "engine/engine.h"

#include <algorithm>
#include <filesystem>

#include "io/config.h"
#include "jinja/chat_template.h"
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
  double submit_time = 0;
  bool done = false;
  // Images: the expanded prompt's mRoPE positions and image token ranges; the tower's
  // output (computed when prefill starts) and one embedding row pointer per prompt token.
  bool has_images = false;
  vision::MmPrompt mm;
  std::vector<float> image_embeds;
  std::vector<const float*> embed_rows;
};

namespace {

bool has_chat_template(const std::string& dir) {
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(dir) / "chat_template.jinja")) return true;
  return fs::exists(fs::path(dir) / "tokenizer_config.json");
}

}  // namespace

std::unique_ptr<Engine> Engine::load(const std::string& dir, const EngineOptions& opts) {
  namespace fs = std::filesystem;
  // Before the (long) weight load, so a bad --max-model-len fails at once.
  if (opts.max_model_len > 0) {
    resolve_max_model_len(opts.max_model_len, load_config(dir).text.max_position_embeddings,
                          opts.allow_long_max_model_len, (fs::path(dir) / "config.json").string());
  }
  auto runner = load_model_runner(dir, opts.load);
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
  return std::make_unique<Engine>(std::move(runner), std::move(tok), std::move(tmpl), opts);
}

Engine::Engine(std::unique_ptr<ModelRunner> model, std::unique_ptr<Tokenizer> tokenizer,
               std::unique_ptr<ChatTemplate> chat_template, const EngineOptions& opts)
    : model_(std::move(model)), tokenizer_(std::move(tokenizer)),
      chat_template_(std::move(chat_template)), opts_(opts) {
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
  eos_ids_ = model_->eos_token_ids();
  if (tokenizer_) {
    for (const char* t : {"<|im_end|>", "<|endoftext|>"}) {
      if (auto id = tokenizer_->token_id(t); id && *id < vocab_) eos_ids_.push_back(*id);
    }
  }
  std::sort(eos_ids_.begin(), eos_ids_.end());
  eos_ids_.erase(std::unique(eos_ids_.begin(), eos_ids_.end()), eos_ids_.end());
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

int64_t Engine::check_context(int64_t prompt_tokens, int64_t max_tokens) const {
  if (prompt_tokens >= max_model_len_) {
    fail("This model's maximum context length is ", max_model_len_, " tokens. However, your request has ",
         prompt_tokens, " input tokens. Please reduce the length of the input messages.");
  }
  if (max_tokens < 0) return max_model_len_ - prompt_tokens;
  if (prompt_tokens + max_tokens > max_model_len_) {
    fail("This model's maximum context length is ", max_model_len_, " tokens. However, you requested ",
         prompt_tokens + max_tokens, " tokens (", prompt_tokens, " in the messages, ", max_tokens,
         " in the completion). Please reduce the length of the messages or completion.");
  }
  return max_tokens;
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
  s->submit_time = now_seconds();
  s->stream = std::make_shared<RequestStream>(static_cast<int64_t>(prompt.size()));
  s->prompt = std::move(prompt);
  if (has_images) {
    s->has_images = true;
    s->mm = std::move(mm);
  }
  auto stream = s->stream;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_) fail("engine is shutting down");
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
  s.state.reset();  // frees the caches now
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (r == FinishReason::kAbort) ++stats_.requests_aborted;
    else if (r == FinishReason::kError) ++stats_.requests_failed;
    else ++stats_.requests_finished;
  }
  s.stream->finish(r, stop_str, stop_token, error);
}

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

void Engine::step(std::vector<std::unique_ptr<Seq>>& active) {
  double t0 = now_seconds();
  std::vector<RunnerStep> steps;
  std::vector<Seq*> owners;
  std::vector<char> samples;  // whether the step's last token gets sampled
  steps.reserve(active.size());
  for (auto& s : active) {
    if (!s->state) {
      s->state = model_->new_sequence();
      s->logits.assign(static_cast<size_t>(vocab_), 0.f);
    }
  }
  encode_pending_images(active);
  // Decoding sequences first: one token each.
  for (auto& s : active) {
    if (s->done || s->prefilled < static_cast<int64_t>(s->prompt.size())) continue;
    steps.push_back({s->state.get(), &s->next_token, 1, s->logits.data()});
    if (s->has_images) steps.back().rope_delta = s->mm.rope_delta;
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
    int64_t n = std::min(remain, budget);
    steps.push_back({s->state.get(), s->prompt.data() + s->prefilled, n, s->logits.data()});
    if (s->has_images) {
      steps.back().embed_rows = s->embed_rows.data() + s->prefilled;
      steps.back().mrope_pos = s->mm.positions.data() + s->prefilled * 3;
    }
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
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!ok[i]) continue;
    Seq& s = *owners[i];
    if (s.prefilled < static_cast<int64_t>(s.prompt.size())) s.prefilled += steps[i].n_tokens;
    if (!samples[i] || s.done) continue;
    try {
      process_token(s, s.logits.data());
      ++generated;
    } catch (const std::exception& e) {
      finish_seq(s, FinishReason::kError, {}, -1, e.what());
    }
  }
  std::lock_guard<std::mutex> lk(mu_);
  ++stats_.steps;
  stats_.prompt_tokens += prefill_tokens;
  stats_.generation_tokens += generated;
  stats_.busy_seconds += now_seconds() - t0;
}

void Engine::encode_pending_images(std::vector<std::unique_ptr<Seq>>& active) {
  // Each image sequence runs the tower once, before its first prefill chunk. The
  // preprocessed patches are dropped afterwards (the embeddings are all prefill needs).
  for (auto& s : active) {
    if (!s->has_images || s->done || !s->embed_rows.empty()) continue;
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

bool Engine::process_token(Seq& s, const float* logits) {
  TokenOut info;
  const uint64_t* allowed = nullptr;
  if (s.grammar && s.grammar->active()) allowed = s.grammar->mask(s.generated + 1 > s.params.min_tokens);
  int tok = s.sampler->sample(logits, &info, allowed);
  info.token = tok;
  ++s.generated;
  if (s.generated == 1) s.stream->set_first_token_time(now_seconds() - s.submit_time);
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
