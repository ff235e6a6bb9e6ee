#include "io/config.h"

#include <filesystem>
#include <cmath>
#include <cstdint>
#include <fstream>

#include "util/error.h"
#include "util/json_parse.h"

namespace qinfer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Typed access to one JSON object, naming "<file>: <path>.<key>" in every error.
class Reader {
 public:
  Reader(const json& j, std::string source, std::string path) : j_(j), source_(std::move(source)), path_(std::move(path)) {}
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  std::string where(const char* key) const { return source_ + ": " + (path_.empty() ? "" : path_ + ".") + key; }
  const json& raw(const char* key) const {
    if (!has(key)) fail(where(key), " is missing");
    return j_[key];
  }
  int64_t integer(const char* key) const {
    const json& v = raw(key);
    if (!v.is_number_integer()) fail(where(key), " must be an integer, got ", v.dump());
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) fail(where(key), " is out of range: ", v.dump());
    return v.get<int64_t>();
  }
  // An integer in [lo, hi], checked as the JSON number it is (no silent truncation to int).
  int int_in(const char* key, int64_t lo, int64_t hi) const {
    int64_t v = integer(key);
    if (v < lo || v > hi) fail(where(key), " must be in [", lo, ", ", hi, "], got ", v);
    return static_cast<int>(v);
  }
  int int_in_or(const char* key, int64_t lo, int64_t hi, int def) const { return has(key) ? int_in(key, lo, hi) : def; }
  int positive(const char* key) const {
    int64_t v = integer(key);
    if (v <= 0 || v > (1 << 30)) fail(where(key), " must be a positive integer, got ", v);
    return static_cast<int>(v);
  }
  int64_t integer_or(const char* key, int64_t def) const { return has(key) ? integer(key) : def; }
  double number(const char* key) const {
    const json& v = raw(key);
    if (!v.is_number()) fail(where(key), " must be a number, got ", v.dump());
    if (!std::isfinite(v.get<double>())) fail(where(key), " must be finite, got ", v.dump());
    return v.get<double>();
  }
  double number_or(const char* key, double def) const { return has(key) ? number(key) : def; }
  bool boolean_or(const char* key, bool def) const {
    if (!has(key)) return def;
    if (!j_[key].is_boolean()) fail(where(key), " must be true or false, got ", j_[key].dump());
    return j_[key].get<bool>();
  }
  std::string string_or(const char* key, const std::string& def) const {
    if (!has(key)) return def;
    if (!j_[key].is_string()) fail(where(key), " must be a string, got ", j_[key].dump());
    return j_[key].get<std::string>();
  }
  std::vector<int> int_list(const char* key, int64_t lo = 0, int64_t hi = INT32_MAX) const {  // int or list of ints
    const json& v = raw(key);
    std::vector<int> out;
    auto one = [&](const json& x) {
      if (!x.is_number_integer()) fail(where(key), " must hold integers, got ", x.dump());
      if ((x.is_number_unsigned() && x.get<uint64_t>() > static_cast<uint64_t>(hi)) || x.get<int64_t>() < lo ||
          x.get<int64_t>() > hi)
        fail(where(key), " must hold integers in [", lo, ", ", hi, "], got ", x.dump());
      out.push_back(static_cast<int>(x.get<int64_t>()));
    };
    if (v.is_number_integer()) {
      one(v);
      return out;
    }
    if (!v.is_array()) fail(where(key), " must be an integer or a list of integers");
    if (v.size() > 4096) fail(where(key), " has ", v.size(), " entries (at most 4096)");
    for (const auto& x : v) one(x);
    return out;
  }
  Reader child(const char* key) const {
    const json& v = raw(key);
    if (!v.is_object()) fail(where(key), " must be an object");
    return Reader(v, source_, (path_.empty() ? "" : path_ + ".") + key);
  }
  const json& j() const { return j_; }

 private:
  const json& j_;
  std::string source_, path_;
};

TextConfig parse_text(const Reader& r, const Reader& top) {
  TextConfig t;
  t.hidden_size = r.positive("hidden_size");
  t.num_hidden_layers = r.positive("num_hidden_layers");
  t.num_attention_heads = r.positive("num_attention_heads");
  t.num_key_value_heads = r.positive("num_key_value_heads");
  t.head_dim = r.has("head_dim") ? r.positive("head_dim") : t.hidden_size / t.num_attention_heads;
  t.attn_output_gate = r.boolean_or("attn_output_gate", true);
  t.linear_num_key_heads = r.positive("linear_num_key_heads");
  t.linear_num_value_heads = r.positive("linear_num_value_heads");
  t.linear_key_head_dim = r.positive("linear_key_head_dim");
  t.linear_value_head_dim = r.positive("linear_value_head_dim");
  t.linear_conv_kernel_dim = r.positive("linear_conv_kernel_dim");
  t.num_experts = r.positive("num_experts");
  t.num_experts_per_tok = r.positive("num_experts_per_tok");
  t.moe_intermediate_size = r.positive("moe_intermediate_size");
  t.shared_expert_intermediate_size = r.positive("shared_expert_intermediate_size");
  t.vocab_size = r.positive("vocab_size");
  t.rms_norm_eps = r.number_or("rms_norm_eps", 1e-6);
  // A negative or zero epsilon makes every norm NaN for an all-zero row: refused at load.
  if (!(t.rms_norm_eps > 0 && t.rms_norm_eps < 1)) fail(r.where("rms_norm_eps"), " must be in (0, 1), got ", t.rms_norm_eps);
  t.max_position_embeddings = r.integer("max_position_embeddings");
  if (t.max_position_embeddings <= 0 || t.max_position_embeddings > (int64_t{1} << 30))
    fail(r.where("max_position_embeddings"), " must be in [1, 2^30], got ", t.max_position_embeddings);
  t.tie_word_embeddings = r.boolean_or("tie_word_embeddings", top.boolean_or("tie_word_embeddings", false));
  t.mtp_num_hidden_layers = r.int_in_or("mtp_num_hidden_layers", 0, 64, 0);
  t.bos_token_id = r.int_in_or("bos_token_id", -1, INT32_MAX, top.int_in_or("bos_token_id", -1, INT32_MAX, -1));
  if (r.has("eos_token_id")) t.eos_token_ids = r.int_list("eos_token_id");
  if (top.has("eos_token_id"))
    for (int id : top.int_list("eos_token_id"))
      if (std::find(t.eos_token_ids.begin(), t.eos_token_ids.end(), id) == t.eos_token_ids.end()) t.eos_token_ids.push_back(id);

  if (t.num_experts_per_tok > t.num_experts) fail(r.where("num_experts_per_tok"), " exceeds num_experts");
  if (t.num_attention_heads % t.num_key_value_heads) fail(r.where("num_key_value_heads"), " must divide num_attention_heads");
  if (t.linear_num_value_heads % t.linear_num_key_heads)
    fail(r.where("linear_num_key_heads"), " must divide linear_num_value_heads");

  if (r.has("layer_types")) {
    const json& lt = r.raw("layer_types");
    if (!lt.is_array() || static_cast<int>(lt.size()) != t.num_hidden_layers)
      fail(r.where("layer_types"), " must be a list of num_hidden_layers (", t.num_hidden_layers, ") entries");
    for (const auto& v : lt) {
      std::string s = v.is_string() ? v.get<std::string>() : "";
      if (s == "linear_attention") t.layer_types.push_back(LayerType::kLinearAttention);
      else if (s == "full_attention") t.layer_types.push_back(LayerType::kFullAttention);
      else fail(r.where("layer_types"), ": unknown layer type ", v.dump());
    }
  } else {
    int interval = r.int_in_or("full_attention_interval", 1, 1 << 20, 4);
    for (int i = 0; i < t.num_hidden_layers; ++i)
      t.layer_types.push_back((i + 1) % interval == 0 ? LayerType::kFullAttention : LayerType::kLinearAttention);
  }

  // RoPE: transformers 5 puts everything in rope_parameters; older files use
  // rope_theta / partial_rotary_factor at the top and mrope in rope_scaling.
  const char* rope_key = r.has("rope_parameters") ? "rope_parameters" : (r.has("rope_scaling") ? "rope_scaling" : nullptr);
  t.rope.theta = r.number_or("rope_theta", 1e7);
  t.rope.partial_rotary_factor = r.number_or("partial_rotary_factor", 0.25);
  if (rope_key) {
    Reader rp = r.child(rope_key);
    t.rope.theta = rp.number_or("rope_theta", t.rope.theta);
    t.rope.partial_rotary_factor = rp.number_or("partial_rotary_factor", t.rope.partial_rotary_factor);
    t.rope.mrope_interleaved = rp.boolean_or("mrope_interleaved", true);
    if (rp.has("mrope_section")) t.rope.mrope_section = rp.int_list("mrope_section", 0, 1 << 20);
    std::string type = rp.string_or("rope_type", rp.string_or("type", "default"));
    if (type != "default" && type != "mrope")
      fail(rp.where("rope_type"), ": rope type '", type, "' is not supported (only default)");
  } else if (!r.has("rope_theta")) {
    fail(r.where("rope_parameters"), " is missing (rope_theta must come from the file)");
  }
  if (!(t.rope.theta > 0)) fail(r.where("rope_theta"), " must be positive, got ", t.rope.theta);
  if (!(t.rope.partial_rotary_factor > 0 && t.rope.partial_rotary_factor <= 1))
    fail(r.where("partial_rotary_factor"), " must be in (0, 1]");
  if (t.rotary_dim() % 2) fail(r.where("partial_rotary_factor"), " gives an odd rotary dimension");
  if (!t.rope.mrope_section.empty()) {
    int64_t sum = 0;  // entries are at most 2^20 and at most 4096 of them: no overflow
    for (int s : t.rope.mrope_section) sum += s;
    if (sum != t.rotary_dim() / 2)
      fail(r.where(rope_key ? rope_key : "rope_parameters"), ".mrope_section sums to ", sum,
           " but rotary_dim/2 is ", t.rotary_dim() / 2);
  }
  return t;
}

QuantConfig parse_quant(const Reader& q) {
  QuantConfig c;
  c.method = q.string_or("quant_method", "gptq");
  if (c.method != "gptq") fail(q.where("quant_method"), ": '", c.method, "' is not supported (only gptq)");
  c.enabled = true;
  c.bits = q.int_in_or("bits", 0, 64, 4);
  if (c.bits != 4 && c.bits != 8 && c.bits != 2) fail(q.where("bits"), ": ", c.bits, " bits is not supported (2, 4 or 8)");
  c.group_size = q.int_in_or("group_size", -1, 1 << 24, 128);  // 2^32+32 used to become 32
  if (c.group_size == 0) fail(q.where("group_size"), " must be positive or -1");
  c.sym = q.boolean_or("sym", true);
  c.desc_act = q.boolean_or("desc_act", false);
  std::string fmt = q.string_or("checkpoint_format", q.string_or("format", "gptq"));
  if (fmt != "gptq" && fmt != "gptq_v2") fail(q.where("checkpoint_format"), ": '", fmt, "' is not supported (gptq or gptq_v2)");
  c.v2_zeros = fmt == "gptq_v2";
  c.lm_head = q.boolean_or("lm_head", false);
  std::string pack = q.string_or("pack_dtype", "int32");
  if (pack != "int32") fail(q.where("pack_dtype"), ": '", pack, "' is not supported (int32)");
  if (q.has("dynamic")) {
    Reader d = q.child("dynamic");
    std::vector<QuantConfig::DynamicRule> neg, pos;
    for (auto it = d.j().begin(); it != d.j().end(); ++it) {
      QuantConfig::DynamicRule rule;
      std::string key = it.key();
      rule.skip = key.rfind("-:", 0) == 0;
      rule.pattern = (rule.skip || key.rfind("+:", 0) == 0) ? key.substr(2) : key;
      rule.re = std::make_shared<const ModuleRegex>(rule.pattern, d.where(key.c_str()));
      if (it->is_object()) {
        Reader o(*it, d.where(key.c_str()), "");
        rule.bits = o.int_in_or("bits", -1, 64, -1);
        rule.group_size = o.int_in_or("group_size", -2, 1 << 24, -2);
        if (o.has("sym")) rule.sym = o.boolean_or("sym", true);
        if (o.has("desc_act")) rule.desc_act = o.boolean_or("desc_act", false);
      }
      (rule.skip ? neg : pos).push_back(std::move(rule));
    }
    c.dynamic = std::move(neg);
    for (auto& r : pos) c.dynamic.push_back(std::move(r));
  }
  return c;
}

}  // namespace

int TextConfig::num_full_layers() const {
  int n = 0;
  for (auto t : layer_types) n += t == LayerType::kFullAttention;
  return n;
}

const QuantConfig::DynamicRule* QuantConfig::match(const std::string& module) const {
  for (const auto& r : dynamic)
    if (r.re->match_prefix(module)) return &r;
  return nullptr;
}

ModelConfig parse_config(const json& j, const std::string& source, const json* quantize_config_json) {
  if (!j.is_object()) fail(source, ": not a JSON object");
  Reader top(j, source, "");
  ModelConfig c;
  c.raw = j;
  c.model_type = top.string_or("model_type", "");
  if (top.has("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string())
    c.architecture = j["architectures"][0].get<std::string>();
  if (c.model_type != "qwen3_5_moe" && c.model_type != "qwen3_5_moe_text")
    fail(source, ": model_type '", c.model_type, "' is not supported (qwen3_5_moe or qwen3_5_moe_text)");
  c.text = top.has("text_config") ? parse_text(top.child("text_config"), top) : parse_text(top, top);
  c.image_token_id = top.int_in_or("image_token_id", -1, INT32_MAX, -1);
  c.video_token_id = top.int_in_or("video_token_id", -1, INT32_MAX, -1);
  c.vision_start_token_id = top.int_in_or("vision_start_token_id", -1, INT32_MAX, -1);
  c.vision_end_token_id = top.int_in_or("vision_end_token_id", -1, INT32_MAX, -1);
  c.has_vision = top.has("vision_config");
  if (top.has("quantization_config")) {
    c.quant = parse_quant(top.child("quantization_config"));
  } else if (quantize_config_json) {
    c.quant = parse_quant(Reader(*quantize_config_json, "quantize_config.json", ""));
  }
  return c;
}

ModelConfig load_config(const std::string& dir) {
  std::string path = (fs::path(dir) / "config.json").string();
  if (!fs::exists(path)) fail(dir, ": no config.json in the model folder");
  json j = read_json_file(path);
  std::string qpath = (fs::path(dir) / "quantize_config.json").string();
  json q;
  bool have_q = fs::exists(qpath);
  if (have_q) q = read_json_file(qpath);
  ModelConfig c = parse_config(j, path, have_q ? &q : nullptr);
  c.dir = dir;
  return c;
}

}  // namespace qinfer
