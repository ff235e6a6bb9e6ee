// config.json of a Qwen3.5/3.6 MoE checkpoint (multimodal with text_config, or
// text-only), plus its quantization config. Every required key that is missing
// or of the wrong type is an Error naming the file and the key.
#pragma once
#include "io/module_regex.h"
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/json_parse.h"  // read_json_file: one JSON file, bounded depth, errors name it

namespace qinfer {

enum class LayerType { kLinearAttention, kFullAttention };

struct RopeConfig {
  double theta = 1e7;
  double partial_rotary_factor = 0.25;
  std::vector<int> mrope_section;      // e.g. {11, 11, 10}
  bool mrope_interleaved = true;
};

struct TextConfig {
  int hidden_size = 0;
  int num_hidden_layers = 0;
  std::vector<LayerType> layer_types;  // size num_hidden_layers
  // gated full attention
  int num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;
  bool attn_output_gate = true;
  // gated deltanet
  int linear_num_key_heads = 0, linear_num_value_heads = 0;
  int linear_key_head_dim = 0, linear_value_head_dim = 0, linear_conv_kernel_dim = 0;
  // moe
  int num_experts = 0, num_experts_per_tok = 0;
  int moe_intermediate_size = 0, shared_expert_intermediate_size = 0;
  int vocab_size = 0;
  double rms_norm_eps = 1e-6;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  int mtp_num_hidden_layers = 0;
  std::vector<int> eos_token_ids;      // text_config eos (int or list), top-level eos merged in
  int bos_token_id = -1;
  RopeConfig rope;

  int rotary_dim() const { return static_cast<int>(head_dim * rope.partial_rotary_factor); }
  int num_full_layers() const;
};

struct QuantConfig {
  bool enabled = false;         // a GPTQ quantization_config is present
  std::string method;           // "gptq"
  int bits = 4;
  int group_size = 128;         // -1: one group over all inputs
  bool sym = true;
  bool desc_act = false;
  bool v2_zeros = false;        // checkpoint_format "gptq_v2": zeros stored as is (v1 adds 1)
  bool lm_head = false;
  struct DynamicRule {          // "-:regex" (skip) or "+:regex"/"regex" (override)
    bool skip;
    std::string pattern;
    std::shared_ptr<const ModuleRegex> re;  // PCRE2 with backtracking limits
    int bits = -1, group_size = -2;
    int sym = -1, desc_act = -1;  // -1: not overridden
  };
  std::vector<DynamicRule> dynamic;  // negative rules first, as GPTQModel orders them
  // First matching rule for a module name (re.match: anchored at the start), or nullptr.
  const DynamicRule* match(const std::string& module) const;
};

struct ModelConfig {
  std::string dir;
  std::string architecture;     // architectures[0]
  std::string model_type;       // "qwen3_5_moe" (or "qwen3_5_moe_text")
  TextConfig text;
  QuantConfig quant;
  int image_token_id = -1, video_token_id = -1, vision_start_token_id = -1, vision_end_token_id = -1;
  bool has_vision = false;
  nlohmann::json raw;           // the whole config.json
};

ModelConfig load_config(const std::string& dir);
// Parses from JSON already read; `source` names the file in errors.
ModelConfig parse_config(const nlohmann::json& j, const std::string& source,
                         const nlohmann::json* quantize_config_json = nullptr);

}  // namespace qinfer
