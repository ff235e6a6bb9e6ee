// The Qwen3.5/3.6 vision tower and patch merger (Qwen3_5MoeVisionModel):
// patch embedding (Conv3d as one matrix product), bilinearly resampled learned
// position table, 2-D axial rotary, `depth` pre-LayerNorm blocks with per-image
// (block-diagonal, non-causal) attention and a GELU-tanh MLP, then LayerNorm,
// 2x2 merge and the erf-GELU merger MLP. fp32 activations; every matrix product
// goes through ops::matmul (BF16/F16/F32 weights as stored), attention through
// ops::attention. Several images run as one batched pass.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "ops/matmul.h"
#include "vision/preprocess.h"
#include "vision/vision_config.h"

namespace qinfer::vision {

// Intermediates of one forward (tests): [patches][hidden] unless noted.
struct VisionTrace {
  std::vector<float> patch_embed, pos_embed, embeddings, rope_cos, rope_sin;  // rope: [patches][head_dim]
  std::vector<float> block0_norm1, block0_qkv, block0_q_rot, block0_k_rot, block0_attn_core, block0_attn_out,
      block0_mlp_out;
  std::vector<std::vector<float>> block_out;
  std::vector<float> last_hidden_state;
};

// Wall-clock seconds of one forward, by stage (qinfer bench's image figure).
struct VisionTimes {
  double embed = 0;       // patch embedding (product + bias), position table, rotary tables
  double norms = 0;       // the blocks' LayerNorms
  double qkv = 0;         // qkv product + bias
  double rope = 0;        // rotary on q and k
  double attention = 0;   // per-image attention core
  double proj = 0;        // output projection + bias + residual
  double fc1 = 0;         // MLP up product
  double gelu = 0;        // bias + GELU
  double fc2 = 0;         // MLP down product + bias + residual
  double merger = 0;      // LayerNorm, 2x2 merge, fc1, GELU, fc2
  double total = 0;
  double blocks() const { return norms + qkv + rope + attention + proj + fc1 + gelu + fc2; }
};

// Analytic floating point operations of one forward, by stage: 2 per multiply-add
// of every matrix product (patch embedding, qkv, proj, fc1, fc2, the merger's two),
// and of attention's two products per head (scores q·k and weights·v, over the
// image's own patches: 4 * patches * patches_of_its_frame * hidden per block).
// Element-wise work (norms, rotary, softmax, GELU, bias) is not counted.
struct VisionFlops {
  double embed = 0, qkv = 0, attention = 0, proj = 0, fc1 = 0, fc2 = 0, merger = 0;
  double total() const { return embed + qkv + attention + proj + fc1 + fc2 + merger; }
};

class VisionTower {
 public:
  // Binds the `prefix` tensors (every expected one present with its exact shape and
  // a float dtype, no unexpected tensor under the prefix); `tensors` must outlive
  // the tower (the mapped checkpoint). Errors name the tensor and its file.
  static std::unique_ptr<VisionTower> load(const VisionConfig& cfg,
                                           const std::map<std::string, const TensorInfo*>& tensors,
                                           const std::string& prefix = "model.visual.");
  ~VisionTower();

  const VisionConfig& config() const { return cfg_; }
  size_t weight_bytes() const;
  int64_t tensor_count() const { return n_tensors_; }
  // See VisionFlops; several images add up (attention stays within each image).
  VisionFlops flops(const std::vector<const ImagePatches*>& images) const;
  // Block 0's weight matrices (qkv, proj, fc1, fc2), for benchmarks of their products.
  std::vector<const ops::DenseMatrix*> block_matrices() const;

  // Merged embeddings of all images, in order: [sum merged tokens][out_hidden_size].
  // times (optional): per-stage seconds, added to what it holds.
  std::vector<float> forward(const std::vector<const ImagePatches*>& images, VisionTrace* trace = nullptr,
                             VisionTimes* times = nullptr) const;

 private:
  VisionTower() = default;
  struct Block;
  VisionConfig cfg_;
  int64_t n_tensors_ = 0;
  ops::DenseMatrix patch_w_;                // [hidden][C*T*P*P]
  std::vector<float> patch_b_, pos_table_;  // pos: [num_pos][hidden]
  std::vector<Block> blocks_;
  std::vector<float> merger_norm_w_, merger_norm_b_, merger_b1_, merger_b2_;
  ops::DenseMatrix merger_w1_, merger_w2_;
};

}  // namespace qinfer::vision
