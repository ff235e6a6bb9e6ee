// ModelRunner over the Qwen3.5/3.6 MoE model of src/model.
#include "engine/model_runner.h"

#include <algorithm>

#include "io/checkpoint.h"
#include "model/model.h"
#include "model/state_copy.h"
#include "io/config.h"
#include "io/generation_config.h"
#include "util/error.h"
#include "util/log.h"
#include "vision/vision_tower.h"

namespace qinfer::engine {

namespace {

class QwenSequence : public RunnerSequence {
 public:
  explicit QwenSequence(std::unique_ptr<SequenceState> s) : state(std::move(s)) {}
  std::unique_ptr<SequenceState> state;
};

SequenceState& state_of(RunnerSequence* s) { return *static_cast<QwenSequence*>(s)->state; }

int argmax_row(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return static_cast<int>(best);
}

// Drafts with the checkpoint's MTP head (docs/MODEL.md §6, vLLM's MTP proposer): the first
// draft step runs the MTP over the rows the main model just accepted (target hidden,
// tokens shifted by one, the hidden state's positions), overwriting its cache from pos0
// on; each further step feeds back the MTP's own output hidden of the last row and the
// drafted token at the next position. Drafts are the argmax of the draft logits.
class MtpDraftSource : public DraftSource {
 public:
  MtpDraftSource(Model* m, int64_t vocab_limit, bool int8) : m_(m), limit_(vocab_limit), int8_(int8) {}
  void propose(std::vector<DraftRequest>& reqs) override {
    const int64_t H = m_->config().text.hidden_size;
    const int64_t V = limit_ > 0 ? limit_ : m_->config().text.vocab_size;   // draft logits row length
    if (reqs.empty()) return;
    const size_t R = reqs.size();
    logits_.resize(R * V);
    hid_.resize(R);
    std::vector<Model::MtpStep> steps;
    for (size_t r = 0; r < R; ++r) {
      DraftRequest& q = reqs[r];
      SequenceState& st = state_of(q.seq);
      if (q.pos0 > st.mtp_tokens())
        fail("MTP draft: rows from position ", q.pos0, " but the MTP cache holds only ", st.mtp_tokens());
      st.rewind_mtp(q.pos0);
      q.drafts.clear();
      Model::MtpStep ms;
      ms.state = &st;
      ms.next_tokens = q.next_tokens;
      ms.hidden = q.hidden;
      ms.n = q.n;
      ms.logits = q.k > 0 ? logits_.data() + r * V : nullptr;
      ms.vocab_limit = limit_;
      ms.int8_head = int8_;
      if (q.k > 1) {   // the last row's MTP hidden feeds the next draft step
        hid_[r].resize(H);
        ms.out_hidden = hid_[r].data();
        ms.last_only = true;
      }
      steps.push_back(ms);
    }
    m_->forward_mtp(steps);
    std::vector<std::vector<float>> last(R);
    for (size_t r = 0; r < R; ++r) {
      if (reqs[r].k < 1) continue;
      reqs[r].drafts.push_back(argmax_row(logits_.data() + r * V, V));
      if (reqs[r].k > 1) last[r] = hid_[r];
    }
    for (int i = 1;; ++i) {
      steps.clear();
      std::vector<size_t> who;
      for (size_t r = 0; r < R; ++r) {
        if (reqs[r].k <= i) continue;
        hid_[r].resize(H);
        Model::MtpStep ms;
        ms.state = &state_of(reqs[r].seq);
        ms.next_tokens = &reqs[r].drafts.back();
        ms.hidden = last[r].data();
        ms.n = 1;
        ms.logits = logits_.data() + who.size() * V;
        ms.out_hidden = hid_[r].data();
        ms.vocab_limit = limit_;
        ms.int8_head = int8_;
        steps.push_back(ms);
        who.push_back(r);
      }
      if (steps.empty()) break;
      m_->forward_mtp(steps);
      for (size_t w = 0; w < who.size(); ++w) {
        const size_t r = who[w];
        reqs[r].drafts.push_back(argmax_row(logits_.data() + w * V, V));
        last[r] = hid_[r];
      }
    }
  }

 private:
  Model* m_;
  int64_t limit_;
  bool int8_;
  std::vector<float> logits_;
  std::vector<std::vector<float>> hid_;
};

class QwenRunner : public ModelRunner {
 public:
  QwenRunner(std::unique_ptr<Model> m, std::vector<int> extra_eos, int64_t draft_vocab, bool draft_int8)
      : model_(std::move(m)) {
    eos_ = model_->config().text.eos_token_ids;
    for (int id : extra_eos) eos_.push_back(id);
    if (model_->has_mtp()) mtp_ = std::make_unique<MtpDraftSource>(model_.get(), draft_vocab, draft_int8);
    census_ = model::state_census(shape(), model_->max_context(), model_->config().text.hidden_size);
  }
  DraftSource* draft_source() override { return mtp_.get(); }
  void rollback(RunnerSequence* s, int64_t keep) override { qinfer::engine::state_of(s).rollback(keep); }
  int vocab_size() const override { return model_->config().text.vocab_size; }
  int64_t max_context() const override { return model_->max_context(); }
  std::vector<int> eos_token_ids() const override { return eos_; }
  std::unique_ptr<RunnerSequence> new_sequence() override {
    return std::make_unique<QwenSequence>(model_->new_sequence());
  }
  void forward(const std::vector<RunnerStep>& steps) override {
    std::vector<Model::Step> ms;
    ms.reserve(steps.size());
    for (const auto& s : steps) {
      Model::Step m;
      m.state = static_cast<QwenSequence*>(s.seq)->state.get();
      m.tokens = s.tokens;
      m.n_tokens = s.n_tokens;
      m.logits = s.logits;
      m.all_logits = s.all_logits;
      m.hidden = s.hidden;
      m.keep_states = s.keep_states;
      m.embed_rows = s.embed_rows;
      m.mrope_pos = s.mrope_pos;
      m.rope_delta = s.rope_delta;
      ms.push_back(m);
    }
    model_->forward(ms);
  }
  bool has_vision() const override { return model_->vision() != nullptr; }
  int image_token_id() const override { return model_->config().image_token_id; }
  int spatial_merge_size() const override {
    return model_->vision() ? model_->vision()->config().spatial_merge_size : 2;
  }
  int64_t hidden_size() const override { return model_->config().text.hidden_size; }
  std::vector<float> encode_images(const std::vector<const vision::ImagePatches*>& images) override {
    return model_->encode_images(images);
  }
  int64_t prefix_block_tokens() const override { return KvCache::kBlockTokens; }
  int64_t sequence_tokens(const RunnerSequence& seq) const override { return state_of(seq).n_tokens(); }
  SavedBlock save_block(const RunnerSequence& seq, int64_t block, bool draft_rows) override {
    auto c = copy_kv_block(state_of(seq), block, draft_rows);
    return {c, c->bytes()};
  }
  SavedState save_state(const RunnerSequence& seq) override {
    auto r = copy_recurrent(state_of(seq));
    return {r, r->bytes(), r->position, nullptr};
  }
  std::unique_ptr<RunnerSequence> restore(const std::vector<SavedBlock>& blocks, const SavedState& state) override {
    auto seq = std::make_unique<QwenSequence>(model_->new_sequence());
    std::vector<std::shared_ptr<const KvBlockCopy>> kv;
    for (const auto& b : blocks) kv.push_back(std::static_pointer_cast<const KvBlockCopy>(b.data));
    restore_prefix(*seq->state, kv, *std::static_pointer_cast<const RecurrentCopy>(state.data));
    return seq;
  }
  size_t saved_block_bytes(bool draft_rows) const override { return kv_block_copy_bytes(shape(), draft_rows); }
  size_t saved_state_bytes() const override { return recurrent_copy_bytes(shape()); }
  int64_t sequence_bytes(int64_t tokens) const override {
    const int64_t B = KvCache::kBlockTokens;   // the KV grows block by block
    const double rows = static_cast<double>((std::max<int64_t>(tokens, 0) + B - 1) / B * B);
    return static_cast<int64_t>(rows * census_.kv_per_token + census_.per_sequence);
  }

 private:
  static const SequenceState& state_of(const RunnerSequence& seq) {
    return *static_cast<const QwenSequence&>(seq).state;
  }
  StateShape shape() const { return model_->new_sequence()->shape(); }
  std::unique_ptr<Model> model_;
  std::vector<int> eos_;
  std::unique_ptr<MtpDraftSource> mtp_;
  model::StateCensus census_;
};

}  // namespace

std::vector<float> ModelRunner::encode_images(const std::vector<const vision::ImagePatches*>&) {
  fail("this model has no vision tower: image input is unavailable");
}

int64_t ModelRunner::sequence_tokens(const RunnerSequence&) const { fail("this model runner has no prefix caching"); }
SavedBlock ModelRunner::save_block(const RunnerSequence&, int64_t, bool) { fail("this model runner has no prefix caching"); }
SavedState ModelRunner::save_state(const RunnerSequence&) { fail("this model runner has no prefix caching"); }
std::unique_ptr<RunnerSequence> ModelRunner::restore(const std::vector<SavedBlock>&, const SavedState&) {
  fail("this model runner has no prefix caching");
}

std::unique_ptr<ModelRunner> load_model_runner(const std::string& dir, const RunnerLoadOptions& opts) {
  LoadOptions lo;
  lo.threads = opts.threads;
  lo.dense_int8 = opts.dense_int8;
  lo.dense_bf16c = opts.dense_bf16c;
  lo.load_vision = opts.load_vision;
  lo.memory_budget = opts.memory_budget;
  lo.max_model_len = opts.max_model_len;
  lo.max_num_seqs = opts.max_num_seqs;
  lo.experts = opts.experts;
  lo.load_mtp = opts.load_mtp;
  lo.draft_int8 = opts.draft_int8;
  lo.draft_layer_int8 = opts.draft_layer_int8;
  lo.draft_vocab = opts.draft_vocab;
  lo.prefix_cache_bytes = opts.prefix_cache_bytes;
  lo.prefix_cache_share = opts.prefix_cache_share;
  auto eos = read_generation_config(dir).eos_token_ids;
  if (opts.load_mtp && !Checkpoint::open(dir)->has("mtp.fc.weight"))   // headers only: before the long load
    fail(dir, ": --speculative-config asks for MTP drafting, but the checkpoint has no mtp.* tensors "
              "(its MTP draft head); run without --speculative-config");
  auto model = Model::load(dir, lo);
  if (opts.load_mtp && !model->has_mtp())
    fail(dir, ": --speculative-config asks for MTP drafting, but the checkpoint has no mtp.* tensors "
              "(its MTP draft head); run without --speculative-config");
  const int64_t V = model->config().text.vocab_size;
  if (opts.draft_vocab > V)
    fail("--speculative-config: \"draft_vocab_size\" ", opts.draft_vocab, " is above the vocabulary size ", V);
  return std::make_unique<QwenRunner>(std::move(model), std::move(eos), opts.draft_vocab, opts.draft_int8);
}

}  // namespace qinfer::engine
