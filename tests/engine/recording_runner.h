// A ModelRunner around another that records, per sequence (numbered in creation order:
// the engine creates them in admission order), the logits rows each step wrote, keyed by
// the position they predict (a step's last row: the sequence's position after the step). Tests compare the rows of a cache hit with
// those of a cold run at the same positions. Speculation passes through: rollback, and
// the inner runner's draft source (the MTP head) behind one that records, per sequence,
// every draft it proposed.
#pragma once
#include <map>
#include <mutex>
#include <vector>

#include "engine/model_runner.h"

namespace qinfer::engine::testing {

class RecordingRunner : public ModelRunner {
 public:
  explicit RecordingRunner(std::unique_ptr<ModelRunner> inner) : inner_(std::move(inner)) {}
  struct Seq : RunnerSequence {
    std::unique_ptr<RunnerSequence> inner;
    int id = 0;
  };
  using Rows = std::map<int64_t, std::vector<float>>;   // position after the step -> logits

  int vocab_size() const override { return inner_->vocab_size(); }
  int64_t max_context() const override { return inner_->max_context(); }
  std::vector<int> eos_token_ids() const override { return inner_->eos_token_ids(); }
  std::unique_ptr<RunnerSequence> new_sequence() override { return wrap(inner_->new_sequence()); }
  void forward(const std::vector<RunnerStep>& steps) override {
    std::vector<RunnerStep> in = steps;
    for (auto& s : in) s.seq = static_cast<Seq*>(s.seq)->inner.get();
    inner_->forward(in);
    std::lock_guard<std::mutex> lk(mu_);
    for (size_t i = 0; i < steps.size(); ++i) {
      const int id = static_cast<Seq*>(steps[i].seq)->id;
      const int64_t after = inner_->sequence_tokens(*in[i].seq);
      // all_logits (a verify run, prompt logprobs): row t predicts position after - n + t + 1.
      // A later step at the same position (after a rejected draft) overwrites the row.
      const int64_t rows = steps[i].all_logits ? steps[i].n_tokens : 1;
      for (int64_t t = 0; t < rows; ++t) {
        const float* row = steps[i].logits + t * vocab_size();
        rows_[id][after - rows + t + 1].assign(row, row + vocab_size());
      }
    }
  }
  DraftSource* draft_source() override {
    if (!inner_->draft_source()) return nullptr;
    if (!drafts_) drafts_ = std::make_unique<Drafts>(this);
    return drafts_.get();
  }
  void rollback(RunnerSequence* s, int64_t keep) override { inner_->rollback(static_cast<Seq*>(s)->inner.get(), keep); }
  bool has_vision() const override { return inner_->has_vision(); }
  int image_token_id() const override { return inner_->image_token_id(); }
  int spatial_merge_size() const override { return inner_->spatial_merge_size(); }
  int64_t hidden_size() const override { return inner_->hidden_size(); }
  std::vector<float> encode_images(const std::vector<const vision::ImagePatches*>& images) override {
    ++images_encoded;
    return inner_->encode_images(images);
  }
  int64_t prefix_block_tokens() const override { return inner_->prefix_block_tokens(); }
  int64_t sequence_tokens(const RunnerSequence& s) const override {
    return inner_->sequence_tokens(*static_cast<const Seq&>(s).inner);
  }
  SavedBlock save_block(const RunnerSequence& s, int64_t b, bool draft_rows) override {
    return inner_->save_block(*static_cast<const Seq&>(s).inner, b, draft_rows);
  }
  SavedState save_state(const RunnerSequence& s) override { return inner_->save_state(*static_cast<const Seq&>(s).inner); }
  std::unique_ptr<RunnerSequence> restore(const std::vector<SavedBlock>& blocks, const SavedState& st) override {
    return wrap(inner_->restore(blocks, st));
  }
  size_t saved_block_bytes(bool draft_rows) const override { return inner_->saved_block_bytes(draft_rows); }
  size_t saved_state_bytes() const override { return inner_->saved_state_bytes(); }

  Rows rows(int id) {
    std::lock_guard<std::mutex> lk(mu_);
    return rows_[id];
  }
  std::vector<int> drafts(int id) {   // every draft proposed for sequence `id`, in order
    std::lock_guard<std::mutex> lk(mu_);
    return drafts_of_[id];
  }
  int images_encoded = 0;

 private:
  std::unique_ptr<RunnerSequence> wrap(std::unique_ptr<RunnerSequence> s) {
    auto w = std::make_unique<Seq>();
    w->inner = std::move(s);
    std::lock_guard<std::mutex> lk(mu_);
    w->id = next_id_++;
    return w;
  }
  class Drafts : public DraftSource {
   public:
    explicit Drafts(RecordingRunner* r) : r_(r) {}
    void propose(std::vector<DraftRequest>& reqs) override {
      std::vector<DraftRequest> in = reqs;
      for (auto& q : in) q.seq = static_cast<Seq*>(q.seq)->inner.get();
      r_->inner_->draft_source()->propose(in);
      std::lock_guard<std::mutex> lk(r_->mu_);
      for (size_t i = 0; i < reqs.size(); ++i) {
        reqs[i].drafts = in[i].drafts;
        auto& d = r_->drafts_of_[static_cast<Seq*>(reqs[i].seq)->id];
        d.insert(d.end(), in[i].drafts.begin(), in[i].drafts.end());
      }
    }

   private:
    RecordingRunner* r_;
  };
  std::unique_ptr<ModelRunner> inner_;
  std::unique_ptr<Drafts> drafts_;
  std::mutex mu_;
  std::map<int, Rows> rows_;
  std::map<int, std::vector<int>> drafts_of_;
  int next_id_ = 0;
};

}  // namespace qinfer::engine::testing
