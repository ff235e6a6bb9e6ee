// The bound weights of the text model (and optional MTP head), in the form the
// forward pass uses: Linear products, fp32 norm scales (zero-centred ones
// already turned into 1 + w), derived constants.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/config.h"
#include "model/linear.h"
#include "model/expert_cache.h"
#include "model/gptq_experts.h"
#include "model/resident.h"

namespace qinfer::model {

struct Expert {
  // Either one fused product (rows 0..I-1 gate, I..2I-1 up) or two.
  Linear gate_up, gate, up, down;
  bool fused() const { return !gate_up.empty(); }
};

// Routing counts of a layer whose experts are file-backed (model/expert_cache.h).
struct ExpertRouting {
  std::vector<uint64_t> count;         // per expert, since the last rebalance
  std::vector<uint8_t> hot;            // 1: the expert's views point at a resident copy
  uint64_t hot_hits = 0, total = 0;    // routings since the last rebalance, and those served hot
};

struct MoeWeights {
  Linear router;                       // [E, H]
  std::vector<Expert> experts;
  Linear shared_gate, shared_up, shared_down, shared_expert_gate;
  std::unique_ptr<ExpertRouting> routing;   // set when the experts are file-backed
  // Set when GPTQ experts are file-backed: their raw tensors; `experts` then holds
  // packed products only for the hot ones (model/gptq_experts.h).
  std::unique_ptr<GptqExpertSource> gptq_source;
};

struct DeltaNetWeights {
  Linear in_qkv, in_z, in_b, in_a, out;
  std::vector<float> conv_t;           // [kernel][conv_dim] (transposed conv1d weight)
  std::vector<float> a_neg;            // -exp(A_log) per value head
  std::vector<float> dt_bias;          // per value head
  std::vector<float> norm;             // gated norm scale (plain w), [value head dim]
};

struct AttentionWeights {
  Linear q, k, v, o;                   // q: per head [query | gate]
  std::vector<float> q_norm, k_norm;   // 1 + w, [head_dim]
};

struct LayerWeights {
  LayerType type;
  int cache_index = 0;                 // index among layers of the same type
  std::vector<float> input_norm, post_norm;   // 1 + w
  DeltaNetWeights delta;
  AttentionWeights attn;
  MoeWeights moe;
};

struct MtpWeights {
  std::vector<float> pre_fc_norm_embedding, pre_fc_norm_hidden, norm;  // 1 + w
  Linear fc;                                                          // [H, 2H]
  LayerWeights layer;                                                 // full attention + MoE
};

struct ModelWeights {
  std::unique_ptr<Checkpoint> ck;      // keeps the mapped files alive
  std::string prefix;                  // "model.language_model." or "model."
  const TensorInfo* embed = nullptr;   // [vocab, H], read row by row
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;       // 1 + w
  Linear lm_head;
  std::unique_ptr<MtpWeights> mtp;
  std::vector<float> inv_freq;         // rotary inverse frequencies [rotary_dim / 2]
  std::unique_ptr<ResidentArena> resident;   // dense and GPTQ weights in huge pages (model/resident.h)
  std::unique_ptr<ExpertCache> expert_cache;  // file-backed experts' hot set (model/expert_cache.h)

  size_t bytes() const;
};

// Binds and checks every tensor; progress on stderr. dense_bf16c (with resident_dense,
// without dense_int8): BF16 dense matrices in the lossless 12-bit form (ops/bf16c.h;
// not routed experts, routers or tiny gates). resident_dense: copies into
// huge pages layer by layer (model/resident.h); experts_mapped: routed experts stay
// file-backed (dense: views into the checkpoint mapping; GPTQ: raw tensors in the
// mapping, repacked on use, model/gptq_experts.h).
std::unique_ptr<ModelWeights> load_weights(const ModelConfig& cfg, std::unique_ptr<Checkpoint> ck,
                                           bool dense_int8, bool load_mtp, bool resident_dense = true,
                                           bool experts_mapped = false, bool mtp_int8 = false,
                                           bool dense_bf16c = false);

// Embedding rows of `tokens` as fp32 into out[n][H].
void embed_rows(const ModelWeights& w, const int* tokens, int64_t n, int64_t hidden, float* out);
void embed_rows(const TensorInfo& embed, const int* tokens, int64_t n, int64_t hidden, float* out);

// For tools that stream a checkpoint one layer at a time (the quantizer): the
// text model's tensor prefix ("model.language_model." or "model."; Error when
// there is no embedding), and decoder layer `index` bound on its own (weights
// are views into the mapped checkpoint; nothing is copied or made resident;
// cache_index as in the full model).
std::string text_prefix(const Checkpoint& ck);
LayerWeights load_text_layer(const ModelConfig& cfg, const Checkpoint& ck, int index);

}  // namespace qinfer::model
