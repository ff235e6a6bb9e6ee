#include "model/model.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

#include "io/checkpoint.h"
#include "model/layers.h"
#include "model/profile.h"
#include "model/weights.h"
#include "ops/matmul.h"
#include "ops/norms_activations_rope.h"
#include "util/error.h"
#include "util/log.h"
#include "util/thread_pool.h"
#include "vision/vision_tower.h"

namespace qinfer {

Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string& dir, const LoadOptions& opts) {
  if (opts.threads > 0) ThreadPool::set_global_threads(opts.threads);
  const double t0 = now_seconds();
  auto m = std::unique_ptr<Model>(new Model());
  m->config_ = load_config(dir);
  const TextConfig& tc = m->config_.text;
  if (tc.num_attention_heads % std::max(1, tc.num_key_value_heads) != 0)
    fail(dir, "/config.json: num_attention_heads ", tc.num_attention_heads, " is not a multiple of num_key_value_heads ",
         tc.num_key_value_heads);
  if (tc.linear_num_value_heads % std::max(1, tc.linear_num_key_heads) != 0)
    fail(dir, "/config.json: linear_num_value_heads ", tc.linear_num_value_heads,
         " is not a multiple of linear_num_key_heads ", tc.linear_num_key_heads);
  if (tc.linear_conv_kernel_dim < 2) fail(dir, "/config.json: linear_conv_kernel_dim must be at least 2");
  if (tc.rotary_dim() % 2 != 0 || tc.rotary_dim() > tc.head_dim)
    fail(dir, "/config.json: rotary dim ", tc.rotary_dim(), " must be even and at most head_dim ", tc.head_dim);
  if (tc.num_experts_per_tok < 1 || tc.num_experts_per_tok > tc.num_experts)
    fail(dir, "/config.json: num_experts_per_tok ", tc.num_experts_per_tok, " must be in 1..num_experts");
  m->arena_ = std::make_unique<model::Arena>();
  auto ck = Checkpoint::open(dir);   // headers only: no weight byte is read before the plan
  // --dense auto: the 12-bit form where the probe finds it faster, for checkpoints whose
  // dense weights are big enough for decode speed to matter (not the tiny test models).
  auto big_dense = [&] {
    const model::WeightCensus c = model::census_of(*ck, m->config_, opts.load_mtp, false);
    return c.dense + (c.lm_head_tied ? 0.0 : c.lm_head) >= kBf16cAutoMinBytes;
  };
  m->dense_bf16c_ = !opts.dense_int8 && opts.resident_dense &&
                    (opts.dense_bf16c > 0 || (opts.dense_bf16c < 0 && big_dense() && ops::bf16c_pays()));
  LoadOptions planned = opts;
  planned.dense_bf16c = m->dense_bf16c_ ? 1 : 0;
  m->plan_ = std::make_unique<model::MemoryPlan>(model::plan_load(*ck, m->config_, planned));
  m->max_context_ = m->plan_->len_lowered ? m->plan_->max_model_len : tc.max_position_embeddings;
  m->w_ = model::load_weights(m->config_, std::move(ck), opts.dense_int8, opts.load_mtp, opts.resident_dense,
                              m->plan_->experts_file_backed, opts.draft_layer_int8, m->dense_bf16c_);
  if (m->plan_->experts_file_backed)
    m->w_->expert_cache = std::make_unique<model::ExpertCache>(m->w_->layers, m->plan_->experts_hot);
  m->load_vision_tower(opts.load_vision);
  log_info("loaded ", dir, ": ", tc.num_hidden_layers, " layers, ", m->weight_bytes() / (1024 * 1024),
           " MiB of weights", m->w_->mtp ? " (with MTP head)" : "", m->vision_ ? " (with vision tower)" : "",
           " in ", now_seconds() - t0, " s");
  return m;
}

bool Model::has_mtp() const { return w_->mtp != nullptr; }

void parse_dense_mode(const std::string& value, bool* dense_int8, int* dense_bf16c) {
  if (value != "auto" && value != "bf16" && value != "bf16c" && value != "int8")
    fail("option --dense: must be auto, bf16, bf16c or int8, got '", value, "'");
  *dense_int8 = value == "int8";
  *dense_bf16c = value == "bf16c" ? 1 : value == "auto" ? -1 : 0;
}

const model::MemoryPlan& Model::memory_plan() const { return *plan_; }

const model::ExpertCache* Model::expert_cache() const { return w_->expert_cache.get(); }

size_t Model::weight_bytes() const { return w_->bytes() + (vision_ ? vision_->weight_bytes() : 0); }

namespace {
// Token ids inside the vocabulary and positions below max_position_embeddings.
void check_tokens(const char* what, size_t step, const int* tokens, int64_t n, int64_t pos0, int64_t vocab,
                  int64_t max_pos) {
  for (int64_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= vocab)
      fail(what, ": token id ", tokens[t], " (step ", step, ", token ", t, ") is outside the vocabulary 0..", vocab - 1);
    if (pos0 + t >= max_pos)
      fail(what, ": position ", pos0 + t, " (step ", step, ", token ", t, ") is past max_position_embeddings ", max_pos);
  }
}

// The checks every step of a forward call shares: a state of this model's shape, used by
// no other step of the call.
void check_state(const char* what, size_t step, const SequenceState* state, const StateShape& shape,
                 std::set<const SequenceState*>& seen) {
  if (!state) fail(what, ": step ", step, " has no sequence state");
  if (!(state->shape() == shape)) fail(what, ": step ", step, " has a sequence state made by a different model");
  if (!seen.insert(state).second) fail(what, ": step ", step, " uses a sequence state that another step also uses");
}

// Where the final norm and lm_head of one step write: its logits (every row for
// all_logits, else the last row) and, optionally, its normed hidden rows.
struct StepOutputs {
  float* logits;   // null: no lm_head for this step
  bool all;
  float* hidden;   // optional [n][H] normed hidden states
};

// Final norm and lm_head: all rows of all_logits steps straight into their
// buffers; the last rows of the other steps batched together in one product.
void final_norm_and_lm_head(const TextConfig& tc, const std::vector<float>& norm, const model::Linear& lm_head,
                            const float* X, const std::vector<model::Span>& spans,
                            const std::vector<StepOutputs>& outs, std::vector<float>* all_hidden) {
  const int64_t H = tc.hidden_size, V = lm_head.rows;   // a draft head may score a prefix of the vocabulary
  const float eps = static_cast<float>(tc.rms_norm_eps);
  const int64_t N = spans.back().begin + spans.back().n;
  std::vector<float> hn(N * H);
  for (size_t s = 0; s < spans.size(); ++s) {
    const auto& sp = spans[s];
    if (outs[s].all || outs[s].hidden || all_hidden) {
      ops::rmsnorm_rows(X + sp.begin * H, norm.data(), sp.n, H, eps, hn.data() + sp.begin * H);
      if (outs[s].hidden) std::memcpy(outs[s].hidden, hn.data() + sp.begin * H, sp.n * H * sizeof(float));
    } else {
      ops::rmsnorm(X + (sp.begin + sp.n - 1) * H, norm.data(), H, eps, hn.data() + (sp.begin + sp.n - 1) * H);
    }
  }
  if (all_hidden) *all_hidden = hn;
  std::vector<float> last;
  std::vector<size_t> last_steps;
  for (size_t s = 0; s < spans.size(); ++s) {
    const auto& sp = spans[s];
    if (!outs[s].logits) continue;   // the MTP hidden only
    if (outs[s].all) {
      lm_head.apply(hn.data() + sp.begin * H, sp.n, outs[s].logits);
    } else {
      last.insert(last.end(), hn.begin() + (sp.begin + sp.n - 1) * H, hn.begin() + (sp.begin + sp.n) * H);
      last_steps.push_back(s);
    }
  }
  if (last_steps.empty()) return;
  const int64_t R = static_cast<int64_t>(last_steps.size());
  if (R == 1) {
    lm_head.apply(last.data(), 1, outs[last_steps[0]].logits);
    return;
  }
  std::vector<float> out(R * V);
  lm_head.apply(last.data(), R, out.data());
  for (int64_t r = 0; r < R; ++r) std::memcpy(outs[last_steps[r]].logits, out.data() + r * V, V * sizeof(float));
}

}  // namespace

std::unique_ptr<SequenceState> Model::new_sequence() const {
  return std::make_unique<SequenceState>(model::text_state_shape(config_.text, w_->mtp != nullptr));
}

void Model::forward(const std::vector<Step>& steps, ForwardTrace* trace) {
  if (steps.empty()) return;
  validate(steps);   // everything is checked before any state changes
  int64_t N = 0;
  for (const Step& st : steps) N += st.n_tokens;
  if (N <= kMaxCallTokens || trace) {
    forward_batch(steps, trace);
    return;
  }
  // Too many tokens for one pass (activation memory): steps of up to
  // kMaxCallTokens tokens are grouped into batches, longer ones run in pieces
  // (multiples of the delta-rule chunk, so the result is the same).
  const int64_t H = config_.text.hidden_size, V = config_.text.vocab_size;
  std::vector<float> discard(V);
  std::vector<Step> group;
  int64_t group_n = 0;
  auto flush = [&] {
    if (!group.empty()) forward_batch(group, nullptr);
    group.clear();
    group_n = 0;
  };
  for (const Step& st : steps) {
    if (st.n_tokens <= kMaxCallTokens) {
      if (group_n + st.n_tokens > kMaxCallTokens) flush();
      group.push_back(st);
      group_n += st.n_tokens;
      continue;
    }
    for (int64_t off = 0; off < st.n_tokens; off += kMaxCallTokens) {
      Step p = st;
      p.tokens = st.tokens + off;
      p.n_tokens = std::min(kMaxCallTokens, st.n_tokens - off);
      const bool last = off + p.n_tokens == st.n_tokens;
      if (st.all_logits) p.logits = st.logits + off * V;
      else if (!last) p.logits = discard.data();
      if (st.hidden) p.hidden = st.hidden + off * H;
      if (st.embed_rows) p.embed_rows = st.embed_rows + off;
      if (st.mrope_pos) p.mrope_pos = st.mrope_pos + off * 3;
      forward_batch({p}, nullptr);
    }
  }
  flush();
}

void Model::validate(const std::vector<Step>& steps) const {
  const TextConfig& tc = config_.text;
  const int64_t V = tc.vocab_size;
  const StateShape shape = model::text_state_shape(tc, w_->mtp != nullptr);
  std::set<const SequenceState*> seen;
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& st = steps[s];
    check_state("forward", s, st.state, shape, seen);
    if (!st.tokens || st.n_tokens < 1) fail("forward: step ", s, " has no tokens (n_tokens = ", st.n_tokens, ")");
    if (!st.logits) fail("forward: step ", s, " has no logits buffer");
    if (st.keep_states && st.n_tokens > kMaxVerifyTokens)
      fail("forward: step ", s, " keeps per-token states for ", st.n_tokens, " tokens; at most ", kMaxVerifyTokens);
    check_tokens("forward", s, st.tokens, st.n_tokens, st.state->n_tokens(), V, max_context());
  }
}

// One pass over already validated steps, all their tokens as the N rows of one
// activation matrix (docs/MODEL.md §2).
void Model::forward_batch(const std::vector<Step>& steps, ForwardTrace* trace) {
  if (w_->expert_cache) w_->expert_cache->maybe_rebalance();   // between passes: no product is running
  const TextConfig& tc = config_.text;
  const int64_t H = tc.hidden_size;
  // 1. Lay the steps out as row spans [begin, begin + n) of X, each with its state and positions.
  std::vector<model::Span> spans;
  std::vector<StepOutputs> outs;
  int64_t N = 0;
  for (const Step& st : steps) {
    spans.push_back({st.state, N, st.n_tokens, st.state->n_tokens(), st.mrope_pos, st.rope_delta, st.keep_states});
    st.state->begin_verify(st.keep_states ? st.n_tokens : 0);
    outs.push_back({st.logits, st.all_logits, st.hidden});
    N += st.n_tokens;
  }

  // 2. Embedding lookup: X[t] = embed_tokens[token t], image rows put in place of their placeholders.
  std::vector<float> X(N * H);
  std::optional<model::ProfileScope> prof(std::in_place, model::Part::kEmbed);
  for (const auto& sp : spans) {
    const Step& st = steps[&sp - spans.data()];
    model::embed_rows(*w_, st.tokens, st.n_tokens, H, X.data() + sp.begin * H);
    if (st.embed_rows)   // image rows replace their placeholders' embeddings
      for (int64_t t = 0; t < st.n_tokens; ++t)
        if (st.embed_rows[t]) std::memcpy(X.data() + (sp.begin + t) * H, st.embed_rows[t], H * sizeof(float));
  }
  if (trace) {
    *trace = ForwardTrace();
    trace->layer_outputs.push_back(X);
    trace->router_topk.resize(tc.num_hidden_layers);
  }
  prof.reset();
  // 3. The decoder layers, in place on X: DeltaNet or gated attention, then the MoE block.
  std::vector<KvCache*> caches(spans.size());
  for (int L = 0; L < tc.num_hidden_layers; ++L) {
    const model::LayerWeights& l = w_->layers[L];
    if (l.type == LayerType::kFullAttention)
      for (size_t s = 0; s < spans.size(); ++s) caches[s] = &spans[s].state->kv(l.cache_index);
    model::decoder_layer(tc, l, w_->inv_freq.data(), X.data(), N, spans, caches,
                         trace ? &trace->router_topk[L] : nullptr, *arena_);
    if (trace) trace->layer_outputs.push_back(X);
  }
  // 4. Each state now holds its step's tokens.
  for (const auto& sp : spans) sp.state->advance(sp.n);

  // 5. Final RMSNorm and lm_head: the logits (and normed hidden rows) each step asked for.
  prof.emplace(model::Part::kHead);
  final_norm_and_lm_head(tc, w_->final_norm, w_->lm_head, X.data(), spans, outs,
                         trace ? &trace->final_hidden : nullptr);
}

void Model::forward_mtp(const std::vector<MtpStep>& steps) {
  if (!w_->mtp) fail("forward_mtp: the model was loaded without its MTP head (LoadOptions::load_mtp)");
  const TextConfig& tc = config_.text;
  const int64_t H = tc.hidden_size, V = tc.vocab_size;
  if (steps.empty()) return;
  const StateShape shape = model::text_state_shape(tc, true);
  std::set<const SequenceState*> seen;
  std::vector<model::Span> spans;
  std::vector<StepOutputs> outs;
  int64_t N = 0;
  for (size_t s = 0; s < steps.size(); ++s) {
    const MtpStep& st = steps[s];
    check_state("forward_mtp", s, st.state, shape, seen);
    if (!st.next_tokens || !st.hidden || st.n < 1) fail("forward_mtp: step ", s, " is missing tokens or hidden states");
    const int64_t pos0 = st.state->mtp_tokens();
    check_tokens("forward_mtp", s, st.next_tokens, st.n, pos0, V, max_context());
    if (st.last_only && st.all_logits) fail("forward_mtp: step ", s, " asks for all_logits and last_only");
    spans.push_back({st.state, N, st.n, pos0});
    outs.push_back({st.logits, st.all_logits, st.out_hidden});
    N += st.n;
  }
  const int64_t limit = steps[0].vocab_limit;
  for (size_t s = 0; s < steps.size(); ++s)
    if (steps[s].vocab_limit != limit || limit < 0 || limit > V)
      fail("forward_mtp: step ", s, " has vocab_limit ", steps[s].vocab_limit, "; every step of a call needs the same, in 0..", V);
  const bool int8 = steps[0].int8_head;
  for (size_t s = 0; s < steps.size(); ++s)
    if (steps[s].int8_head != int8) fail("forward_mtp: step ", s, " differs from step 0 in int8_head");
  const model::Linear* lm = &w_->lm_head;
  const bool requant = int8 && w_->lm_head.dense.type != ops::WType::Q8;
  if ((limit > 0 && limit < V) || requant) {
    const int64_t rows = limit > 0 ? limit : V;
    if (!draft_head_ || draft_head_->rows != rows || draft_head_int8_ != int8) {
      model::Linear h = model::row_prefix(w_->lm_head, rows);
      if (requant) {
        const double t0 = now_seconds();
        h = model::to_int8(h);
        log_info("MTP drafts: int8 copy of lm_head rows 0..", rows - 1, " (", h.bytes() >> 20, " MiB) made in ",
                 now_seconds() - t0, " s");
      }
      draft_head_ = std::make_unique<model::Linear>(std::move(h));
      draft_head_int8_ = int8;
    }
    lm = draft_head_.get();
  }
  const model::MtpWeights& m = *w_->mtp;
  const float eps = static_cast<float>(tc.rms_norm_eps);
  // c = [RMSNorm_e(embed(next)) | RMSNorm_h(hidden)] -> fc
  std::vector<float> c(N * 2 * H), e(H);
  for (size_t s = 0; s < steps.size(); ++s)
    for (int64_t t = 0; t < steps[s].n; ++t) {
      float* row = c.data() + (spans[s].begin + t) * 2 * H;
      model::embed_rows(*w_, steps[s].next_tokens + t, 1, H, e.data());
      ops::rmsnorm(e.data(), m.pre_fc_norm_embedding.data(), H, eps, row);
      ops::rmsnorm(steps[s].hidden + t * H, m.pre_fc_norm_hidden.data(), H, eps, row + H);
    }
  std::vector<float> X(N * H);
  m.fc.apply(c.data(), N, X.data());
  // Per step, its first `skip` rows only update the cache (their outputs are not asked for).
  std::vector<model::Span> kv_spans, run_spans;
  std::vector<KvCache*> kv_caches, run_caches;
  std::vector<float> kv_u, run_x;
  std::vector<StepOutputs> run_outs;
  for (size_t s = 0; s < spans.size(); ++s) {
    const model::Span& sp = spans[s];
    const MtpStep& st = steps[s];
    const bool every_row = st.all_logits || (st.out_hidden && !st.last_only);
    const int64_t skip = every_row ? 0 : st.logits || st.out_hidden ? sp.n - 1 : sp.n;
    if (skip > 0) {
      kv_spans.push_back({sp.state, static_cast<int64_t>(kv_u.size()) / H, skip, sp.pos0});
      kv_caches.push_back(&sp.state->mtp_kv(0));
      kv_u.resize(kv_u.size() + skip * H);
      ops::rmsnorm_rows(X.data() + sp.begin * H, m.layer.input_norm.data(), skip, H, eps,
                        kv_u.data() + kv_u.size() - skip * H);
    }
    if (skip < sp.n) {
      run_spans.push_back({sp.state, static_cast<int64_t>(run_x.size()) / H, sp.n - skip, sp.pos0 + skip});
      run_caches.push_back(&sp.state->mtp_kv(0));
      run_x.insert(run_x.end(), X.begin() + (sp.begin + skip) * H, X.begin() + (sp.begin + sp.n) * H);
      run_outs.push_back(outs[s]);
    }
  }
  if (!kv_spans.empty()) {   // before the other rows, which attend to these
    arena_->reset();
    model::attention_write_kv(tc, m.layer.attn, w_->inv_freq.data(), kv_u.data(),
                              static_cast<int64_t>(kv_u.size()) / H, kv_spans, kv_caches, *arena_);
  }
  if (!run_spans.empty())
    model::decoder_layer(tc, m.layer, w_->inv_freq.data(), run_x.data(), static_cast<int64_t>(run_x.size()) / H,
                         run_spans, run_caches, nullptr, *arena_);
  for (const auto& sp : spans) sp.state->advance_mtp(sp.n);
  // The rows that ran the layer go through the head (each step's that asked for outputs).
  if (run_spans.empty()) return;
  final_norm_and_lm_head(tc, m.norm, *lm, run_x.data(), run_spans, run_outs, nullptr);
}

}  // namespace qinfer

namespace qinfer {

void Model::load_vision_tower(bool enabled) {
  if (!config_.has_vision) return;
  if (!enabled) {
    log_info(config_.dir, ": vision tower not loaded (image input disabled)");
    return;
  }
  // A config with vision_config but no model.visual.* tensor at all (a text-only
  // export, as the text fixtures): text only. Any visual tensor present: strict.
  const auto& all = w_->ck->all();
  auto it = all.lower_bound("model.visual.");
  if (it == all.end() || it->first.compare(0, 13, "model.visual.") != 0) {
    log_info(config_.dir, ": config.json has a vision_config but the checkpoint holds no model.visual.* tensors: text only");
    return;
  }
  const std::string src = config_.dir + "/config.json";
  vision::VisionConfig vc = vision::parse_vision_config(config_.raw["vision_config"], src);
  if (vc.out_hidden_size != config_.text.hidden_size)
    fail(src, ": vision_config.out_hidden_size ", vc.out_hidden_size, " differs from the text hidden_size ",
         config_.text.hidden_size);
  if (config_.image_token_id < 0 || config_.image_token_id >= config_.text.vocab_size)
    fail(src, ": image_token_id ", config_.image_token_id, " is missing or outside the vocabulary");
  vision_ = vision::VisionTower::load(vc, w_->ck->all());
}

std::vector<float> Model::encode_images(const std::vector<const vision::ImagePatches*>& images) const {
  if (!vision_) fail("this model was loaded without a vision tower, so it cannot take images");
  return vision_->forward(images);
}

}  // namespace qinfer
