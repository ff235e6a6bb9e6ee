#include "engine/speculative.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "model/model.h"
#include "util/error.h"
#include "util/log.h"

namespace qinfer::engine {

namespace {
// A draft-weights key: "int8" (an int8 copy) or "bf16" (the checkpoint's own); true for int8.
bool int8_or_bf16(const nlohmann::json& v, const std::string& key) {
  if (!v.is_string() || (v.get<std::string>() != "int8" && v.get<std::string>() != "bf16"))
    fail("--speculative-config: \"", key, "\" must be \"int8\" or \"bf16\" (the checkpoint's own)");
  return v.get<std::string>() == "int8";
}
}  // namespace

SpeculativeOptions parse_speculative_config(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("--speculative-config: not valid JSON (", e.what(), ")");
  }
  if (!j.is_object()) fail("--speculative-config: must be a JSON object, e.g. {\"method\": \"mtp\", \"num_speculative_tokens\": 3}");
  SpeculativeOptions o;
  for (const auto& [key, v] : j.items()) {
    if (key == "method") {
      if (!v.is_string()) fail("--speculative-config: \"method\" must be a string");
      o.method = v.get<std::string>();
      if (o.method != "mtp" && o.method != "qwen3_next_mtp" && o.method != "qwen3_5_mtp")
        fail("--speculative-config: method \"", o.method,
             "\" is not supported; this engine drafts with the checkpoint's MTP head: use \"mtp\" "
             "(or \"qwen3_next_mtp\" / \"qwen3_5_mtp\")");
    } else if (key == "num_speculative_tokens") {
      if (!v.is_number_integer()) fail("--speculative-config: \"num_speculative_tokens\" must be an integer");
      const int64_t k = v.get<int64_t>();
      if (k < 1 || k > Model::kMaxDraftTokens)
        fail("--speculative-config: \"num_speculative_tokens\" must be 1..", Model::kMaxDraftTokens, ", got ", k);
      o.num_speculative_tokens = static_cast<int>(k);
    } else if (key == "disable_by_batch_size") {
      if (v.is_null()) continue;
      if (!v.is_number_integer() || v.get<int64_t>() < 1)
        fail("--speculative-config: \"disable_by_batch_size\" must be a positive integer");
      o.disable_by_batch_size = static_cast<int>(std::min<int64_t>(v.get<int64_t>(), 1 << 30));
    } else if (key == "draft_vocab_size") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1)
        fail("--speculative-config: \"draft_vocab_size\" must be a positive integer");
      o.draft_vocab_size = v.get<int64_t>();
    } else if (key == "draft_lm_head") {
      o.draft_int8 = int8_or_bf16(v, key);
    } else if (key == "draft_layer") {
      o.draft_layer_int8 = int8_or_bf16(v, key);
    } else {
      log_warn("--speculative-config: key \"", key, "\" is not used by this engine; ignored");
    }
  }
  if (o.method.empty()) fail("--speculative-config: \"method\" is missing (use \"mtp\")");
  if (o.num_speculative_tokens == 0)
    fail("--speculative-config: \"num_speculative_tokens\" is missing (1..", Model::kMaxDraftTokens, ")");
  return o;
}

SpecDecodeStats SpecDecodeStats::since(const SpecDecodeStats& before) const {
  SpecDecodeStats d = *this;
  d.num_drafts -= before.num_drafts;
  d.num_draft_tokens -= before.num_draft_tokens;
  d.num_accepted_tokens -= before.num_accepted_tokens;
  for (size_t i = 0; i < d.accepted_per_pos.size() && i < before.accepted_per_pos.size(); ++i)
    d.accepted_per_pos[i] -= before.accepted_per_pos[i];
  return d;
}

std::string SpecDecodeStats::summary() const {
  std::string per_pos;
  for (size_t i = 0; i < accepted_per_pos.size(); ++i)
    per_pos += cat(i ? " " : "", num_drafts ? double(accepted_per_pos[i]) / double(num_drafts) : 0.0);
  return cat("speculative decoding: ", num_drafts, " verify passes, ", num_draft_tokens, " draft tokens, ",
             num_accepted_tokens, " accepted: acceptance rate ", acceptance_rate(), ", mean accepted length ",
             mean_accepted_length(), " (per position: ", per_pos, ")");
}

}  // namespace qinfer::engine
