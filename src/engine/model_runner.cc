// ModelRunner over the Qwen3.5/3.6 MoE model of src/model.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/model_runner.h"
#include "model/model.h"
#include "io/config.h"
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

// generation_config.json's eos_token_id: an int or a list; absent file or key: none.
std::vector<int> generation_eos_ids(const std::string& dir) {
  std::vector<int> ids;
  auto path = std::filesystem::path(dir) / "generation_config.json";
  if (!std::filesystem::exists(path)) return ids;
  const nlohmann::json j = read_json_file(path.string());
  if (!j.is_object() || !j.contains("eos_token_id")) return ids;
  const auto& e = j["eos_token_id"];
  if (e.is_number_integer()) ids.push_back(e.get<int>());
  else if (e.is_array()) {
    for (const auto& x : e) {
      if (!x.is_number_integer()) fail(path.string(), ": eos_token_id: entries must be integers");
      ids.push_back(x.get<int>());
    }
  } else if (!e.is_null()) {
    fail(path.string(), ": eos_token_id: must be an integer or a list of integers");
  }
  return ids;
}

class QwenRunner : public ModelRunner {
 public:
  QwenRunner(std::unique_ptr<Model> m, std::vector<int> extra_eos) : model_(std::move(m)) {
    eos_ = model_->config().text.eos_token_ids;
    for (int id : extra_eos) eos_.push_back(id);
  }
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
      m.all_logits = false;
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

 private:
  std::unique_ptr<Model> model_;
  std::vector<int> eos_;
};

}  // namespace

std::vector<float> ModelRunner::encode_images(const std::vector<const vision::ImagePatches*>&) {
  fail("this model has no vision tower: image input is unavailable");
}

std::unique_ptr<ModelRunner> load_model_runner(const std::string& dir, const RunnerLoadOptions& opts) {
  LoadOptions lo;
  lo.threads = opts.threads;
  lo.dense_int8 = opts.dense_int8;
  lo.load_vision = opts.load_vision;
  auto eos = generation_eos_ids(dir);
  return std::make_unique<QwenRunner>(Model::load(dir, lo), std::move(eos));
}

}  // namespace qinfer::engine
