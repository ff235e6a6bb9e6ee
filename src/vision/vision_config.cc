#include "vision/vision_config.h"

#include <cmath>
#include <filesystem>

#include "io/config.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace qinfer::vision {

int VisionConfig::grid_side() const {
  return static_cast<int>(std::floor(std::sqrt(static_cast<double>(num_position_embeddings))));
}

namespace {

int64_t get_int(const nlohmann::json& j, const char* key, int64_t def, const std::string& src, int64_t lo = 1) {
  if (!j.contains(key) || j[key].is_null()) return def;
  const auto& v = j[key];
  if (!v.is_number_integer()) fail(src, ": ", key, " must be an integer");
  const int64_t x = v.get<int64_t>();
  if (x < lo) fail(src, ": ", key, " must be at least ", lo, ", got ", x);
  return x;
}

bool get_bool(const nlohmann::json& j, const char* key, bool def, const std::string& src) {
  if (!j.contains(key) || j[key].is_null()) return def;
  if (!j[key].is_boolean()) fail(src, ": ", key, " must be true or false");
  return j[key].get<bool>();
}

}  // namespace

VisionConfig parse_vision_config(const nlohmann::json& j, const std::string& src) {
  if (!j.is_object()) fail(src, ": vision_config must be an object");
  VisionConfig c;
  const std::string s = src + ": vision_config";
  c.depth = static_cast<int>(get_int(j, "depth", c.depth, s));
  c.hidden_size = static_cast<int>(get_int(j, "hidden_size", c.hidden_size, s));
  c.intermediate_size = static_cast<int>(get_int(j, "intermediate_size", c.intermediate_size, s));
  c.num_heads = static_cast<int>(get_int(j, "num_heads", c.num_heads, s));
  c.in_channels = static_cast<int>(get_int(j, "in_channels", c.in_channels, s));
  c.patch_size = static_cast<int>(get_int(j, "patch_size", c.patch_size, s));
  c.temporal_patch_size = static_cast<int>(get_int(j, "temporal_patch_size", c.temporal_patch_size, s));
  c.spatial_merge_size = static_cast<int>(get_int(j, "spatial_merge_size", c.spatial_merge_size, s));
  c.out_hidden_size = static_cast<int>(get_int(j, "out_hidden_size", c.out_hidden_size, s));
  c.num_position_embeddings = static_cast<int>(get_int(j, "num_position_embeddings", c.num_position_embeddings, s));
  if (j.contains("hidden_act")) {
    if (!j["hidden_act"].is_string()) fail(s, ".hidden_act must be a string");
    c.hidden_act = j["hidden_act"].get<std::string>();
  }
  if (c.hidden_act != "gelu_pytorch_tanh" && c.hidden_act != "gelu")
    fail(s, ".hidden_act \"", c.hidden_act, "\" is not supported (gelu_pytorch_tanh or gelu)");
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object() && j["rope_parameters"].contains("rope_theta")) {
    if (!j["rope_parameters"]["rope_theta"].is_number()) fail(s, ".rope_parameters.rope_theta must be a number");
    c.rope_theta = j["rope_parameters"]["rope_theta"].get<double>();
  }
  if (j.contains("deepstack_visual_indexes") && j["deepstack_visual_indexes"].is_array() &&
      !j["deepstack_visual_indexes"].empty())
    fail(s, ".deepstack_visual_indexes is not empty: deepstack mergers are not part of Qwen3.5/3.6");
  if (c.hidden_size % c.num_heads) fail(s, ".hidden_size ", c.hidden_size, " is not a multiple of num_heads ", c.num_heads);
  if (c.head_dim() % 4) fail(s, ": head dim ", c.head_dim(), " must be a multiple of 4 for the 2-D vision rope");
  if (c.in_channels != 3) fail(s, ".in_channels must be 3 (RGB), got ", c.in_channels);
  const int side = c.grid_side();
  if (side < 1 || side * side != c.num_position_embeddings)
    fail(s, ".num_position_embeddings ", c.num_position_embeddings, " is not a square");
  return c;
}

ProcessorConfig parse_processor_config(const nlohmann::json& j, const std::string& src) {
  if (!j.is_object()) fail(src, ": must be a JSON object");
  ProcessorConfig c;
  // transformers: size {shortest_edge, longest_edge} (pixel counts); min_pixels / max_pixels win.
  if (j.contains("size") && !j["size"].is_null()) {
    const auto& s = j["size"];
    if (!s.is_object()) fail(src, ": size must be an object");
    c.min_pixels = get_int(s, "shortest_edge", c.min_pixels, src + ": size");
    c.max_pixels = get_int(s, "longest_edge", c.max_pixels, src + ": size");
  }
  c.min_pixels = get_int(j, "min_pixels", c.min_pixels, src);
  c.max_pixels = get_int(j, "max_pixels", c.max_pixels, src);
  c.patch_size = static_cast<int>(get_int(j, "patch_size", c.patch_size, src));
  c.temporal_patch_size = static_cast<int>(get_int(j, "temporal_patch_size", c.temporal_patch_size, src));
  c.merge_size = static_cast<int>(get_int(j, "merge_size", c.merge_size, src));
  for (const char* key : {"image_mean", "image_std"}) {
    if (!j.contains(key)) continue;
    const auto& v = j[key];
    if (!v.is_array() || v.size() != 3) fail(src, ": ", key, " must be a list of 3 numbers");
    for (int i = 0; i < 3; ++i) {
      if (!v[i].is_number()) fail(src, ": ", key, "[", i, "] must be a number");
      (std::string(key) == "image_mean" ? c.image_mean : c.image_std)[i] = v[i].get<float>();
    }
  }
  for (float s : c.image_std)
    if (s == 0.f) fail(src, ": image_std must not contain 0");
  if (j.contains("rescale_factor")) {
    if (!j["rescale_factor"].is_number()) fail(src, ": rescale_factor must be a number");
    c.rescale_factor = j["rescale_factor"].get<double>();
  }
  c.do_resize = get_bool(j, "do_resize", true, src);
  c.do_rescale = get_bool(j, "do_rescale", true, src);
  c.do_normalize = get_bool(j, "do_normalize", true, src);
  if (j.contains("resample") && !(j["resample"].is_number_integer() && j["resample"].get<int>() == 3))
    fail(src, ": resample must be 3 (bicubic), the only resampling implemented");
  if (c.min_pixels > c.max_pixels) fail(src, ": min_pixels ", c.min_pixels, " is above max_pixels ", c.max_pixels);
  return c;
}

ProcessorConfig load_processor_config(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path p = fs::path(dir) / "preprocessor_config.json";
  if (!fs::exists(p)) return ProcessorConfig();
  return parse_processor_config(read_json_file(p.string()), p.string());
}

ProcessorConfig apply_processor_overrides(const ProcessorConfig& base, const nlohmann::json& kw,
                                          const std::string& src) {
  if (kw.is_null()) return base;
  if (!kw.is_object()) fail(src, ": must be an object");
  ProcessorConfig c = base;
  for (auto it = kw.begin(); it != kw.end(); ++it) {
    const std::string& k = it.key();
    if (k == "min_pixels") c.min_pixels = get_int(kw, "min_pixels", c.min_pixels, src);
    else if (k == "max_pixels") c.max_pixels = get_int(kw, "max_pixels", c.max_pixels, src);
    else if (k == "size") {
      if (!it->is_object()) fail(src, ".size must be an object");
      c.min_pixels = get_int(*it, "shortest_edge", c.min_pixels, src + ".size");
      c.max_pixels = get_int(*it, "longest_edge", c.max_pixels, src + ".size");
    } else {
      fail(src, ": unsupported key \"", k, "\" (min_pixels, max_pixels or size are accepted)");
    }
  }
  if (c.min_pixels > c.max_pixels) fail(src, ": min_pixels ", c.min_pixels, " is above max_pixels ", c.max_pixels);
  return c;
}

}  // namespace qinfer::vision
