#include "io/synthetic_checkpoint.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/dtype.h"
#include "io/gptq.h"
#include "io/safetensors.h"
#include "util/error.h"
#include "util/log.h"
#include "util/thread_pool.h"

namespace qinfer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Counter-based random numbers: value i of stream `key` is a pure function of
// (key, i), so tensors fill in parallel and identically on every run.
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline float uniform01(uint64_t key, uint64_t i) { return (mix(key ^ mix(i)) >> 40) * (1.0f / 16777216.0f); }
// Approximately normal: sum of 4 uniforms, centred and scaled to unit variance.
inline float normalish(uint64_t key, uint64_t i) {
  float s = uniform01(key, 4 * i) + uniform01(key, 4 * i + 1) + uniform01(key, 4 * i + 2) + uniform01(key, 4 * i + 3);
  return (s - 2.0f) * 1.7320508f;
}

uint64_t name_key(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return mix(h);
}

class Builder {
 public:
  Builder(const SynthOptions& o) : o_(o) {}

  // BF16 tensor with values mean + std * N(0,1).
  void bf16(const std::string& name, std::vector<int64_t> shape, float std, float mean = 0.0f) {
    uint64_t key = name_key(o_.seed, name);
    add(name, DType::BF16, shape, [key, std, mean](uint8_t* dst, size_t nbytes) {
      uint16_t* p = reinterpret_cast<uint16_t*>(dst);
      parallel_for(static_cast<int64_t>(nbytes / 2), 1 << 16, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) p[i] = f32_to_bf16(mean + std * normalish(key, i));
      });
    });
  }
  // BF16 tensor with values from f(i).
  void bf16_fn(const std::string& name, std::vector<int64_t> shape, std::function<float(uint64_t key, int64_t i)> f) {
    uint64_t key = name_key(o_.seed, name);
    add(name, DType::BF16, shape, [key, f](uint8_t* dst, size_t nbytes) {
      uint16_t* p = reinterpret_cast<uint16_t*>(dst);
      for (size_t i = 0; i < nbytes / 2; ++i) p[i] = f32_to_bf16(f(key, static_cast<int64_t>(i)));
    });
  }
  // A GPTQ module <prefix>.{qweight,qzeros,scales,g_idx}: sym, v1 zeros, weights of about `std`.
  void gptq(const std::string& prefix, int64_t out, int64_t in) {
    const int64_t G = in / o_.group_size;
    uint64_t key = name_key(o_.seed, prefix);
    // Codes uniform in 0..15 around zero 8 have standard deviation ~4.6 steps.
    const float scale = 1.0f / (4.6f * std::sqrt(static_cast<float>(in)));
    add(prefix + ".qweight", DType::I32, {in / 8, out}, [key](uint8_t* dst, size_t nbytes) {
      uint32_t* p = reinterpret_cast<uint32_t*>(dst);
      for (size_t i = 0; i < nbytes / 4; ++i) p[i] = static_cast<uint32_t>(mix(key ^ mix(i)));
    });
    add(prefix + ".qzeros", DType::I32, {G, out / 8}, [](uint8_t* dst, size_t nbytes) {
      uint32_t* p = reinterpret_cast<uint32_t*>(dst);
      for (size_t i = 0; i < nbytes / 4; ++i) p[i] = 0x77777777u;  // true zero 8, stored v1
    });
    add(prefix + ".scales", DType::F16, {G, out}, [key, scale](uint8_t* dst, size_t nbytes) {
      uint16_t* p = reinterpret_cast<uint16_t*>(dst);
      for (size_t i = 0; i < nbytes / 2; ++i) p[i] = f32_to_f16(scale * (0.75f + 0.5f * uniform01(key + 1, i)));
    });
    int gs = o_.group_size;
    add(prefix + ".g_idx", DType::I32, {in}, [gs](uint8_t* dst, size_t nbytes) {
      int32_t* p = reinterpret_cast<int32_t*>(dst);
      for (size_t i = 0; i < nbytes / 4; ++i) p[i] = static_cast<int32_t>(i / gs);
    });
  }

  int64_t finish(const std::string& dir) {
    shards_.push_back(std::move(current_));
    const int n = static_cast<int>(shards_.size());
    json weight_map = json::object();
    int64_t total = 0;
    Progress progress("writing shards", n);
    for (int i = 0; i < n; ++i) {
      std::string file = n == 1 ? "model.safetensors"
                                : cat("model-", pad5(i + 1), "-of-", pad5(n), ".safetensors");
      for (const auto& name : shard_names_[i]) weight_map[name] = file;
      shards_[i].add_metadata("format", "pt");
      total += static_cast<int64_t>(shards_[i].total_bytes());
      shards_[i].write((fs::path(dir) / file).string());
      progress.update(i + 1);
    }
    progress.finish();
    if (n > 1) {
      json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
      std::ofstream((fs::path(dir) / "model.safetensors.index.json").string()) << index.dump(2) << "\n";
    }
    return total;
  }

 private:
  static std::string pad5(int v) {
    std::string s = std::to_string(v);
    return std::string(5 - std::min<size_t>(5, s.size()), '0') + s;
  }
  void add(const std::string& name, DType dt, std::vector<int64_t> shape, SafetensorsWriter::Fill fill) {
    int64_t bytes = static_cast<int64_t>(dtype_size(dt));
    for (auto d : shape) bytes *= d;
    if (current_bytes_ > 0 && current_bytes_ + bytes > o_.shard_bytes) {
      shards_.push_back(std::move(current_));
      current_ = SafetensorsWriter();
      current_bytes_ = 0;
    }
    if (shard_names_.size() <= shards_.size()) shard_names_.resize(shards_.size() + 1);
    shard_names_[shards_.size()].push_back(name);
    current_.add_lazy(name, dt, std::move(shape), std::move(fill));
    current_bytes_ += bytes;
  }

  const SynthOptions& o_;
  std::vector<SafetensorsWriter> shards_;
  std::vector<std::vector<std::string>> shard_names_;
  SafetensorsWriter current_;
  int64_t current_bytes_ = 0;
};

json make_config(const SynthOptions& o) {
  json layer_types = json::array();
  for (int i = 0; i < o.layers; ++i)
    layer_types.push_back((i + 1) % o.full_attention_interval == 0 ? "full_attention" : "linear_attention");
  int rot_half = static_cast<int>(o.head_dim * 0.25) / 2;
  int s0 = (rot_half + 2) / 3, s1 = (rot_half - s0 + 1) / 2, s2 = rot_half - s0 - s1;
  json text = {
      {"attention_bias", false}, {"attn_output_gate", true}, {"bos_token_id", 248044},
      {"dtype", "bfloat16"}, {"eos_token_id", 248044}, {"full_attention_interval", o.full_attention_interval},
      {"head_dim", o.head_dim}, {"hidden_act", "silu"}, {"hidden_size", o.hidden},
      {"layer_types", layer_types}, {"linear_conv_kernel_dim", 4},
      {"linear_key_head_dim", o.linear_key_dim}, {"linear_num_key_heads", o.linear_key_heads},
      {"linear_num_value_heads", o.linear_value_heads}, {"linear_value_head_dim", o.linear_value_dim},
      {"mamba_ssm_dtype", "float32"}, {"max_position_embeddings", o.max_position_embeddings},
      {"model_type", "qwen3_5_moe_text"}, {"moe_intermediate_size", o.moe_intermediate},
      {"mtp_num_hidden_layers", 1}, {"mtp_use_dedicated_embeddings", false},
      {"num_attention_heads", o.heads}, {"num_experts", o.experts}, {"num_experts_per_tok", o.experts_per_tok},
      {"num_hidden_layers", o.layers}, {"num_key_value_heads", o.kv_heads}, {"rms_norm_eps", 1e-6},
      {"rope_parameters", {{"mrope_interleaved", true}, {"mrope_section", {s0, s1, s2}},
                           {"partial_rotary_factor", 0.25}, {"rope_theta", 10000000}, {"rope_type", "default"}}},
      {"shared_expert_intermediate_size", o.shared_intermediate}, {"tie_word_embeddings", false},
      {"vocab_size", o.vocab}};
  json c = {{"architectures", {"Qwen3_5MoeForConditionalGeneration"}}, {"model_type", "qwen3_5_moe"},
            {"text_config", text}, {"tie_word_embeddings", false}, {"eos_token_id", 248046},
            {"image_token_id", 248056}, {"video_token_id", 248057},
            {"vision_start_token_id", 248053}, {"vision_end_token_id", 248054},
            {"qinfer_synthetic", o.label.empty() ? "random weights: output is noise" : o.label}};
  if (o.vision_depth > 0) {
    c["vision_config"] = {{"deepstack_visual_indexes", json::array()}, {"depth", o.vision_depth},
                          {"hidden_act", "gelu_pytorch_tanh"}, {"hidden_size", o.vision_hidden},
                          {"in_channels", 3}, {"initializer_range", 0.02},
                          {"intermediate_size", o.vision_intermediate}, {"model_type", "qwen3_5_moe"},
                          {"num_heads", o.vision_heads}, {"num_position_embeddings", o.vision_pos_embeddings},
                          {"out_hidden_size", o.hidden}, {"patch_size", 16}, {"spatial_merge_size", 2},
                          {"temporal_patch_size", 2}};
  }
  if (o.gptq) {
    c["quantization_config"] = {
        {"bits", 4}, {"group_size", o.group_size}, {"desc_act", false}, {"sym", true}, {"lm_head", false},
        {"quant_method", "gptq"}, {"checkpoint_format", "gptq"}, {"format", "gptq"}, {"pack_dtype", "int32"},
        {"dynamic", {{"-:.*\\.linear_attn\\..*", json::object()}, {"-:.*\\.mlp\\.gate$", json::object()},
                     {"-:.*\\.mlp\\.shared_expert\\..*", json::object()},
                     {"-:.*\\.mlp\\.shared_expert_gate$", json::object()}, {"-:.*\\.self_attn\\..*", json::object()}}},
        {"meta", {{"quantizer", {"qinfer-synth"}}}}};
  }
  return c;
}

// The decoder layer's tensors (prefix ends with "layers.{i}."), shared by the main stack and MTP.
void add_attention(Builder& b, const SynthOptions& o, const std::string& p) {
  const int64_t H = o.hidden;
  const float s_in = 1.0f / std::sqrt(static_cast<float>(H));
  b.bf16(p + "self_attn.q_proj.weight", {2LL * o.heads * o.head_dim, H}, s_in);
  b.bf16(p + "self_attn.k_proj.weight", {1LL * o.kv_heads * o.head_dim, H}, s_in);
  b.bf16(p + "self_attn.v_proj.weight", {1LL * o.kv_heads * o.head_dim, H}, s_in);
  b.bf16(p + "self_attn.o_proj.weight", {H, 1LL * o.heads * o.head_dim}, 1.0f / std::sqrt(float(o.heads * o.head_dim)));
  b.bf16(p + "self_attn.q_norm.weight", {o.head_dim}, 0.15f);
  b.bf16(p + "self_attn.k_norm.weight", {o.head_dim}, 0.15f);
}

void add_moe(Builder& b, const SynthOptions& o, const std::string& p, bool gptq) {
  const int64_t H = o.hidden, I = o.moe_intermediate, S = o.shared_intermediate, E = o.experts;
  const float s_in = 1.0f / std::sqrt(static_cast<float>(H));
  b.bf16(p + "mlp.gate.weight", {E, H}, 2.0f * s_in);
  if (gptq) {
    for (int e = 0; e < E; ++e) {
      std::string ep = cat(p, "mlp.experts.", e, ".");
      b.gptq(ep + "gate_proj", I, H);
      b.gptq(ep + "up_proj", I, H);
      b.gptq(ep + "down_proj", H, I);
    }
  } else {
    b.bf16(p + "mlp.experts.gate_up_proj", {E, 2 * I, H}, s_in);
    b.bf16(p + "mlp.experts.down_proj", {E, H, I}, 1.0f / std::sqrt(static_cast<float>(I)));
  }
  b.bf16(p + "mlp.shared_expert.gate_proj.weight", {S, H}, s_in);
  b.bf16(p + "mlp.shared_expert.up_proj.weight", {S, H}, s_in);
  b.bf16(p + "mlp.shared_expert.down_proj.weight", {H, S}, 1.0f / std::sqrt(static_cast<float>(S)));
  b.bf16(p + "mlp.shared_expert_gate.weight", {1, H}, s_in);
}

void add_norms(Builder& b, const SynthOptions& o, const std::string& p) {
  b.bf16(p + "input_layernorm.weight", {o.hidden}, 0.15f);
  b.bf16(p + "post_attention_layernorm.weight", {o.hidden}, 0.15f);
}

// model.visual.*: patch embedding, position table, pre-LN blocks, merger (names and shapes
// of the real checkpoint; LayerNorm weights around 1, small biases).
void add_vision(Builder& b, const SynthOptions& o) {
  const std::string v = "model.visual.";
  const int64_t H = o.vision_hidden, I = o.vision_intermediate, M = 4 * H, patch = 3 * 2 * 16 * 16;
  auto s = [](int64_t in) { return 1.0f / std::sqrt(static_cast<float>(in)); };
  b.bf16(v + "patch_embed.proj.weight", {H, 3, 2, 16, 16}, s(patch));
  b.bf16(v + "patch_embed.proj.bias", {H}, 0.02f);
  b.bf16(v + "pos_embed.weight", {o.vision_pos_embeddings, H}, 0.5f);
  auto layer_norm = [&](const std::string& p, int64_t n) {
    b.bf16(p + ".weight", {n}, 0.1f, 1.0f);
    b.bf16(p + ".bias", {n}, 0.02f);
  };
  auto linear = [&](const std::string& p, int64_t out, int64_t in) {
    b.bf16(p + ".weight", {out, in}, s(in));
    b.bf16(p + ".bias", {out}, 0.02f);
  };
  for (int i = 0; i < o.vision_depth; ++i) {
    const std::string p = cat(v, "blocks.", i, ".");
    layer_norm(p + "norm1", H);
    linear(p + "attn.qkv", 3 * H, H);
    linear(p + "attn.proj", H, H);
    layer_norm(p + "norm2", H);
    linear(p + "mlp.linear_fc1", I, H);
    linear(p + "mlp.linear_fc2", H, I);
  }
  layer_norm(v + "merger.norm", H);
  linear(v + "merger.linear_fc1", M, M);
  linear(v + "merger.linear_fc2", o.hidden, M);
}

}  // namespace

void enable_synth_vision(SynthOptions& o, bool demo) {
  SynthOptions real;
  o.vision_depth = demo ? 2 : 27;
  o.vision_hidden = demo ? 64 : real.vision_hidden;
  o.vision_intermediate = demo ? 128 : real.vision_intermediate;
  o.vision_heads = demo ? 4 : real.vision_heads;
  o.vision_pos_embeddings = demo ? 64 : real.vision_pos_embeddings;
  o.vision_min_pixels = demo ? 64 * 64 : real.vision_min_pixels;
  o.vision_max_pixels = demo ? 512 * 512 : real.vision_max_pixels;
}

SynthOptions demo_synth_options() {
  SynthOptions o;
  o.layers = 4;
  o.hidden = 128;
  o.experts = 16;
  o.experts_per_tok = 4;
  o.moe_intermediate = 64;
  o.shared_intermediate = 64;
  o.heads = 4;
  o.kv_heads = 2;
  o.head_dim = 64;
  o.linear_key_heads = 2;
  o.linear_value_heads = 4;
  o.linear_key_dim = 32;
  o.linear_value_dim = 32;
  o.max_position_embeddings = 262144;  // the real model's, so `vllm serve` works on it unchanged
  o.label = "qinfer demo model: real tokenizer, random weights - its output is noise";
  return o;
}

int64_t write_synthetic_checkpoint(const std::string& out_dir, const SynthOptions& o) {
  if (o.layers <= 0 || o.hidden <= 0 || o.experts <= 0 || o.experts_per_tok > o.experts)
    fail("synth: bad dimensions (layers ", o.layers, ", hidden ", o.hidden, ", experts ", o.experts, ")");
  if (o.gptq && (o.hidden % o.group_size || o.moe_intermediate % o.group_size || o.hidden % 8 || o.moe_intermediate % 8))
    fail("synth: --group-size ", o.group_size, " must divide hidden (", o.hidden, ") and moe intermediate (",
         o.moe_intermediate, ")");
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (!fs::is_directory(out_dir)) fail(out_dir, ": cannot create the output folder");

  Builder b(o);
  const int64_t H = o.hidden;
  const float s_in = 1.0f / std::sqrt(static_cast<float>(H));
  const std::string lm = "model.language_model.";
  b.bf16(lm + "embed_tokens.weight", {o.vocab, H}, 1.0f);
  b.bf16(lm + "norm.weight", {H}, 0.15f);
  b.bf16("lm_head.weight", {o.vocab, H}, s_in);
  const int64_t key_dim = 1LL * o.linear_key_heads * o.linear_key_dim;
  const int64_t value_dim = 1LL * o.linear_value_heads * o.linear_value_dim;
  for (int i = 0; i < o.layers; ++i) {
    std::string p = cat(lm, "layers.", i, ".");
    add_norms(b, o, p);
    if ((i + 1) % o.full_attention_interval == 0) {
      add_attention(b, o, p);
    } else {
      std::string a = p + "linear_attn.";
      b.bf16(a + "in_proj_qkv.weight", {2 * key_dim + value_dim, H}, s_in);
      b.bf16(a + "in_proj_z.weight", {value_dim, H}, s_in);
      b.bf16(a + "in_proj_b.weight", {o.linear_value_heads, H}, s_in);
      b.bf16(a + "in_proj_a.weight", {o.linear_value_heads, H}, s_in);
      b.bf16(a + "conv1d.weight", {2 * key_dim + value_dim, 1, 4}, 0.5f);
      b.bf16(a + "dt_bias", {o.linear_value_heads}, 0.5f);
      b.bf16_fn(a + "A_log", {o.linear_value_heads},
                [](uint64_t key, int64_t i) { return std::log(0.05f + 1.95f * uniform01(key, i)); });
      b.bf16(a + "norm.weight", {o.linear_value_dim}, 0.15f, 1.0f);
      b.bf16(a + "out_proj.weight", {H, value_dim}, 1.0f / std::sqrt(static_cast<float>(value_dim)));
    }
    add_moe(b, o, p, o.gptq);
  }
  if (o.mtp) {
    b.bf16("mtp.pre_fc_norm_embedding.weight", {H}, 0.15f);
    b.bf16("mtp.pre_fc_norm_hidden.weight", {H}, 0.15f);
    b.bf16("mtp.fc.weight", {H, 2 * H}, 1.0f / std::sqrt(2.0f * H));
    add_norms(b, o, "mtp.layers.0.");
    add_attention(b, o, "mtp.layers.0.");
    add_moe(b, o, "mtp.layers.0.", false);
    b.bf16("mtp.norm.weight", {H}, 0.15f);
  }
  if (o.vision_depth > 0) {
    add_vision(b, o);
    json pre = {{"size", {{"longest_edge", o.vision_max_pixels}, {"shortest_edge", o.vision_min_pixels}}},
                {"patch_size", 16}, {"temporal_patch_size", 2}, {"merge_size", 2},
                {"image_mean", {0.5, 0.5, 0.5}}, {"image_std", {0.5, 0.5, 0.5}},
                {"processor_class", "Qwen3VLProcessor"}, {"image_processor_type", "Qwen2VLImageProcessorFast"}};
    std::ofstream((fs::path(out_dir) / "preprocessor_config.json").string()) << pre.dump(1) << "\n";
  }
  std::ofstream((fs::path(out_dir) / "config.json").string()) << make_config(o).dump(2) << "\n";
  if (o.gptq) {
    json q = make_config(o)["quantization_config"];
    std::ofstream((fs::path(out_dir) / "quantize_config.json").string()) << q.dump(2) << "\n";
  }
  json gen = {{"bos_token_id", 248044}, {"eos_token_id", {248046, 248044}}, {"pad_token_id", 248044},
              {"do_sample", true}, {"temperature", 1.0}, {"top_k", 20}, {"top_p", 0.95}};
  std::ofstream((fs::path(out_dir) / "generation_config.json").string()) << gen.dump(2) << "\n";
  if (!o.tokenizer_dir.empty()) {
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"}) {
      fs::path src = fs::path(o.tokenizer_dir) / f;
      if (!fs::exists(src)) fail(src.string(), ": tokenizer file missing");
      fs::copy_file(src, fs::path(out_dir) / f, fs::copy_options::overwrite_existing, ec);
      if (ec) fail((fs::path(out_dir) / f).string(), ": cannot copy: ", ec.message());
    }
  }
  return b.finish(out_dir);
}

}  // namespace qinfer
