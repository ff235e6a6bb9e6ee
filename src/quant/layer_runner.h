// Runs one decoder layer (model::decoder_layer, the same code as inference) over
// every calibration sample: inputs from one ActivationStore, outputs optionally
// into another, an optional MoeObserver seeing each expert's inputs. Samples are
// batched up to Model::kMaxCallTokens tokens a pass; a longer sample runs alone
// in pieces of that size (its caches carried between pieces), like Model::forward.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "io/config.h"
#include "model/arena.h"
#include "model/layers.h"
#include "quant/activation_store.h"

namespace qinfer::quant {

class LayerRunner {
 public:
  explicit LayerRunner(const TextConfig& tc);
  // l.cache_index must be 0 (the layer runs with caches for itself alone).
  // on_rows (optional) is called after each batch with the number of rows it ran.
  void run(const model::LayerWeights& l, const ActivationStore& in, ActivationStore* out,
           model::MoeObserver* observer, const std::function<void(int64_t)>& on_rows = nullptr);

 private:
  const TextConfig& tc_;
  std::vector<float> inv_freq_;
  StateShape shape_;
  model::Arena arena_;
};

}  // namespace qinfer::quant
