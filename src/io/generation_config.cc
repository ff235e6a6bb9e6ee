#include "io/generation_config.h"

#include <climits>
#include <filesystem>

#include "util/error.h"
#include "util/json_parse.h"

namespace qinfer {
namespace {

int eos_id(const nlohmann::ordered_json& x, const std::string& file) {
  if (!x.is_number_integer() || (x.is_number_unsigned() && x.get<uint64_t>() > uint64_t(INT_MAX)) ||
      (!x.is_number_unsigned() && (x.get<int64_t>() < 0 || x.get<int64_t>() > INT_MAX)))
    fail(file, ": eos_token_id: entries must be integers in 0..", INT_MAX, " (got ", x.dump(), ")");
  return static_cast<int>(x.get<int64_t>());
}

}  // namespace

GenerationConfig read_generation_config(const std::string& model_dir) {
  GenerationConfig gc;
  const auto path = std::filesystem::path(model_dir) / "generation_config.json";
  if (!std::filesystem::exists(path)) return gc;
  const std::string file = path.string();
  gc.json = read_ordered_json_file(file);
  if (!gc.json.is_object()) fail(file, ": must hold a JSON object");
  const auto it = gc.json.find("eos_token_id");
  if (it == gc.json.end() || it->is_null()) return gc;
  if (it->is_array()) {
    for (const auto& x : *it) gc.eos_token_ids.push_back(eos_id(x, file));
  } else if (it->is_number()) {
    gc.eos_token_ids.push_back(eos_id(*it, file));
  } else {
    fail(file, ": eos_token_id: must be an integer or a list of integers");
  }
  return gc;
}

}  // namespace qinfer
