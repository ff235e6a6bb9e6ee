// Adapter over the chat module's parsers for one chat choice: splits generated text
// into reasoning / content (qwen3 reasoning parser) and tool calls (qwen3_coder tool
// parser), streaming (OpenAI delta objects) or all at once (the final message).
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace qinfer::server {

struct ChatOutputConfig {
  bool reasoning = false;        // --reasoning-parser qwen3
  bool thinking = true;          // the prompt opened a <think> block (enable_thinking)
  bool tools = false;            // parse tool calls (tools given, tool_choice != none, parser enabled)
  nlohmann::json tool_defs;      // the request's tools (for schema-based conversion)
  bool parallel_tool_calls = true;
  bool include_reasoning = true;
};

class ChatOutput {
 public:
  explicit ChatOutput(ChatOutputConfig cfg);
  ~ChatOutput();
  // Streaming: the delta fields ({"reasoning_content"/"reasoning", "content", "tool_calls"})
  // produced by this piece of text; an empty object when nothing is ready yet.
  nlohmann::json push(const std::string& text);
  nlohmann::json finish();
  bool streamed_tool_calls() const;
  // Non-streaming: the message fields for the whole text ("content" may be null,
  // "tool_calls" only when there are some).
  nlohmann::json parse_all(const std::string& text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qinfer::server
