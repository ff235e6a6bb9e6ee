#include "server/chat_output.h"

#include <optional>

#include "chat/reasoning_parser.h"
#include "chat/tool_parser.h"

namespace qinfer::server {

using json = nlohmann::json;

struct ChatOutput::Impl {
  ChatOutputConfig cfg;
  chat::ToolSchemas schemas;
  std::optional<chat::ReasoningStream> reasoning;
  std::optional<chat::ToolCallStream> tools;
  bool streamed_calls = false;

  explicit Impl(ChatOutputConfig c) : cfg(std::move(c)), schemas(cfg.tool_defs) {
    if (cfg.reasoning) reasoning.emplace(!cfg.thinking);
    if (cfg.tools) tools.emplace(schemas);
  }

  json to_json(const std::string& r, const std::string& content, const chat::ToolStreamDelta* td) {
    json out = json::object();
    // Current vLLM sends `reasoning`; older vLLM and DeepSeek-style clients read
    // `reasoning_content`. Both carry the same text.
    if (!r.empty() && cfg.include_reasoning) out["reasoning"] = out["reasoning_content"] = r;
    std::string c = content;
    if (td) c = td->content;
    if (!c.empty()) out["content"] = c;
    if (td && !td->tool_calls.empty()) {
      json calls = json::array();
      for (const auto& d : td->tool_calls) {
        if (!cfg.parallel_tool_calls && d.index > 0) continue;
        json t = {{"index", d.index}};
        json fn = json::object();
        if (!d.id.empty()) {
          t["id"] = d.id;
          t["type"] = "function";
        }
        if (!d.name.empty()) fn["name"] = d.name;
        if (!d.arguments.empty()) fn["arguments"] = d.arguments;
        t["function"] = fn;
        calls.push_back(t);
      }
      if (!calls.empty()) {
        out["tool_calls"] = calls;
        streamed_calls = true;
      }
    }
    return out;
  }

  json step(const std::string& text, bool at_end) {
    std::string r, content;
    if (reasoning) {
      auto d = reasoning->push(text);
      r = d.reasoning;
      content = d.content;
      if (at_end) {
        auto f = reasoning->finish();
        r += f.reasoning;
        content += f.content;
      }
    } else {
      content = text;
    }
    if (!tools) return to_json(r, content, nullptr);
    chat::ToolStreamDelta td = tools->push(content);
    if (at_end) {
      chat::ToolStreamDelta f = tools->finish();
      td.content += f.content;
      for (auto& call : f.tool_calls) {
        bool merged = false;
        for (auto& existing : td.tool_calls) {
          if (existing.index == call.index) {
            existing.arguments += call.arguments;
            if (existing.id.empty()) existing.id = call.id;
            if (existing.name.empty()) existing.name = call.name;
            merged = true;
          }
        }
        if (!merged) td.tool_calls.push_back(call);
      }
    }
    return to_json(r, content, &td);
  }
};

ChatOutput::ChatOutput(ChatOutputConfig cfg) : impl_(std::make_unique<Impl>(std::move(cfg))) {}
ChatOutput::~ChatOutput() = default;

json ChatOutput::push(const std::string& text) { return impl_->step(text, false); }
json ChatOutput::finish() { return impl_->step("", true); }
bool ChatOutput::streamed_tool_calls() const { return impl_->streamed_calls; }

json ChatOutput::parse_all(const std::string& text) const {
  const ChatOutputConfig& cfg = impl_->cfg;
  std::optional<std::string> reasoning, content = text;
  if (cfg.reasoning) {
    auto s = chat::split_reasoning(text, cfg.thinking);
    reasoning = s.reasoning;
    content = s.content;
  }
  if (content && content->empty()) content.reset();
  json msg = json::object();
  if (cfg.tools && content) {
    auto r = chat::parse_tool_calls(*content, impl_->schemas);
    content = r.content;
    if (!r.tool_calls.empty()) {
      json calls = json::array();
      for (const auto& c : r.tool_calls) {
        calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
        if (!cfg.parallel_tool_calls) break;
      }
      msg["tool_calls"] = calls;
    }
  }
  msg["content"] = content ? json(*content) : json(nullptr);
  if (cfg.reasoning && cfg.include_reasoning) {
    msg["reasoning"] = msg["reasoning_content"] = reasoning && !reasoning->empty() ? json(*reasoning) : json(nullptr);
  }
  return msg;
}

}  // namespace qinfer::server
