// The vision tower's configuration (config.json -> vision_config) and the image
// processor's (preprocessor_config.json), with transformers' class defaults for
// missing keys. Errors name the file and the key.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace qinfer::vision {

struct VisionConfig {
  int depth = 27, hidden_size = 1152, intermediate_size = 4304, num_heads = 16;
  int in_channels = 3, patch_size = 16, temporal_patch_size = 2, spatial_merge_size = 2;
  int out_hidden_size = 3584;            // HF class default; checkpoints set it (2048)
  int num_position_embeddings = 2304;
  std::string hidden_act = "gelu_pytorch_tanh";
  double rope_theta = 10000.0;           // "axial" vision rope

  int head_dim() const { return hidden_size / num_heads; }
  int grid_side() const;                 // floor(sqrt(num_position_embeddings))
  int64_t patch_values() const { return int64_t(in_channels) * temporal_patch_size * patch_size * patch_size; }
  int64_t merge_width() const { return int64_t(hidden_size) * spatial_merge_size * spatial_merge_size; }
};

// `j` is the vision_config object; `source` names the file in errors.
VisionConfig parse_vision_config(const nlohmann::json& j, const std::string& source);

// The real Qwen3.6 values (shortest_edge 65536, longest_edge 16777216) are the
// defaults used when the folder has no preprocessor_config.json.
struct ProcessorConfig {
  int64_t min_pixels = 65536, max_pixels = 16777216;
  int patch_size = 16, temporal_patch_size = 2, merge_size = 2;
  float image_mean[3] = {0.5f, 0.5f, 0.5f}, image_std[3] = {0.5f, 0.5f, 0.5f};
  double rescale_factor = 1.0 / 255.0;
  bool do_resize = true, do_rescale = true, do_normalize = true;
  int factor() const { return patch_size * merge_size; }
};

ProcessorConfig parse_processor_config(const nlohmann::json& j, const std::string& source);
// <dir>/preprocessor_config.json, or the defaults when the file is absent.
ProcessorConfig load_processor_config(const std::string& dir);
// vLLM's mm_processor_kwargs for images: min_pixels / max_pixels (also as
// size.shortest_edge / size.longest_edge). Unknown keys are an Error naming them.
ProcessorConfig apply_processor_overrides(const ProcessorConfig& base, const nlohmann::json& kwargs,
                                          const std::string& source);

}  // namespace qinfer::vision
