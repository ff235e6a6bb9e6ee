// The engine's view of a model: something that advances several sequences in one
// batched call. The real one wraps qinfer::Model (model_runner.cc); tests use fakes.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qinfer::vision {
struct ImagePatches;
}

namespace qinfer::engine {

class RunnerSequence {
 public:
  virtual ~RunnerSequence() = default;
};

struct RunnerStep {
  RunnerSequence* seq;
  const int* tokens;
  int64_t n_tokens;      // >= 1: a prefill chunk or one decode token
  float* logits;         // [vocab] row of the step's last token
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

  // Image input. has_vision(): the model has a loaded vision tower; then
  // encode_images returns the merged embeddings of all images in order,
  // [sum merged tokens][hidden_size()].
  virtual bool has_vision() const { return false; }
  virtual int image_token_id() const { return -1; }
  virtual int spatial_merge_size() const { return 2; }
  virtual int64_t hidden_size() const { return 0; }
  virtual std::vector<float> encode_images(const std::vector<const vision::ImagePatches*>& images);
};

struct RunnerLoadOptions {
  int threads = 0;
  bool dense_int8 = false;
  bool load_vision = true;   // false: text only (--limit-mm-per-prompt '{"image": 0}')
};

// Loads qinfer::Model from a checkpoint folder. EOS ids: generation_config.json's
// eos_token_id (int or list) merged with the config's.
std::unique_ptr<ModelRunner> load_model_runner(const std::string& dir, const RunnerLoadOptions& opts);

}  // namespace qinfer::engine
