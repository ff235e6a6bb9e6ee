// Writes a Qwen3.5-MoE checkpoint folder with random weights, in the real
// layouts (GPTQ per-expert int4 or BF16 fused experts): config.json,
// model.safetensors (sharded with an index when large) and, for a demo model,
// the tokenizer files. Used to exercise loading and speed at real dimensions,
// and to build the bundled demo model, whose output is noise.
#pragma once
#include <cstdint>
#include <string>

namespace qinfer {

struct SynthOptions {
  // Real Qwen3.6-35B-A3B text dimensions by default.
  int layers = 40;
  int full_attention_interval = 4;
  int hidden = 2048;
  int vocab = 248320;
  int experts = 256, experts_per_tok = 8;
  int moe_intermediate = 512, shared_intermediate = 512;
  int heads = 16, kv_heads = 2, head_dim = 256;
  int linear_key_heads = 16, linear_value_heads = 32, linear_key_dim = 128, linear_value_dim = 128;
  int group_size = 32;
  bool gptq = true;             // per-expert GPTQ int4 experts; false: BF16 fused experts
  bool mtp = false;             // also write the 19 mtp.* tensors (fused, BF16)
  uint64_t seed = 1;
  int64_t max_position_embeddings = 262144;
  int64_t shard_bytes = 4LL << 30;  // split into shards of about this size
  // vision_depth > 0: also the vision tower model.visual.* (BF16, random) with vision_config
  // and a preprocessor_config.json (min/max_pixels below). Real Qwen3.6 dimensions by default.
  int vision_depth = 0;
  int vision_hidden = 1152, vision_intermediate = 4304, vision_heads = 16, vision_pos_embeddings = 2304;
  int64_t vision_min_pixels = 65536, vision_max_pixels = 16777216;
  std::string tokenizer_dir;    // if set, copy tokenizer.json/tokenizer_config.json/chat_template.jinja
  std::string label;            // written into config.json as "qinfer_synthetic"
};

// The small demo configuration (real vocabulary, tiny layers).
SynthOptions demo_synth_options();
// Turns on the vision tower: the real dimensions, or with `demo` a tiny one (2 blocks,
// width 64) with small images (64x64 .. 512x512 pixels: 4 .. 256 image tokens).
void enable_synth_vision(SynthOptions& o, bool demo);

// Writes the folder (created if needed); progress on stderr. Returns total bytes written.
int64_t write_synthetic_checkpoint(const std::string& out_dir, const SynthOptions& opt);

}  // namespace qinfer
