#include "chat/chat_format.h"

#include <filesystem>
#include <utility>

#include "util/error.h"
#include "util/json_parse.h"

namespace qinfer::chat {

ChatFormat ChatFormat::load(const std::string& dir) {
  ChatFormat f;
  const std::filesystem::path path = std::filesystem::path(dir) / "tokenizer_config.json";
  if (!std::filesystem::exists(path)) return f;
  const nlohmann::ordered_json cfg = read_ordered_json_file(path.string());
  if (!cfg.is_object()) fail(path.string(), ": expected a JSON object");
  for (auto [key, field] : {std::pair{"eos_token", &f.turn_end}, std::pair{"pad_token", &f.end_of_text}}) {
    if (std::string s = special_token_field(cfg, key, path.string()); !s.empty()) *field = std::move(s);
  }
  return f;
}

std::string ChatFormat::forced_tool_call(bool close_thinking, std::optional<std::string_view> function) const {
  std::string out;
  if (close_thinking) out += think_close;
  out += tool_call_open;
  if (function) {
    out += *function;
    out += function_name_end;
  }
  return out;
}

std::string ChatFormat::without_turn_end(std::string prompt) const {
  for (const std::string& tail : {turn_end + "\n", turn_end}) {
    if (prompt.size() >= tail.size() && prompt.compare(prompt.size() - tail.size(), tail.size(), tail) == 0) {
      prompt.resize(prompt.size() - tail.size());
      break;
    }
  }
  return prompt;
}

}  // namespace qinfer::chat
