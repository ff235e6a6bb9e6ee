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
  // Number of matrix-product floating point operations for one image (2 per MAC,
  // attention scores and values included).
  double flops(const ImagePatches& img) const;

  // Merged embeddings of all images, in order: [sum merged tokens][out_hidden_size].
  std::vector<float> forward(const std::vector<const ImagePatches*>& images, VisionTrace* trace = nullptr) const;

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
