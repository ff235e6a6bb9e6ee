// The qwen3_coder tool-call parser and the qwen3 reasoning parser on model output: the
// whole-text parsers, and the streaming ones fed the text whole and in pieces cut at points
// derived from the input. Streamed results must not depend on the cuts (issue 12 item 8):
// content, call names, streamed arguments and the final calls, and the reasoning/content
// split, are the same for every split. The first byte picks the tool schemas and whether
// the prompt ended reasoning.
#include "chat/reasoning_parser.h"
#include "chat/tool_parser.h"
#include "fuzz_util.h"

namespace {
using namespace qinfer::chat;

const ToolSchemas& schemas(int which) {
  static const ToolSchemas none;
  static const ToolSchemas some(nlohmann::json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}, "opts": {"type": "object"}, "ok": {"type": "boolean"},
      "t": {"type": "number"}, "l": {"type": "array", "items": {"type": "integer"}}, "any": {}}}}},
    {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
  ])"));
  return which ? some : none;
}

ToolCallIdGenerator counter_ids() {
  auto n = std::make_shared<int>(0);
  return [n] { return "id" + std::to_string((*n)++); };
}

template <class Stream, class Absorb>
void feed(Stream& st, std::string_view text, const std::vector<size_t>& cuts, const Absorb& absorb) {
  size_t prev = 0;
  for (size_t c : cuts) {
    absorb(st.push(text.substr(prev, c - prev)));
    prev = c;
  }
  absorb(st.push(text.substr(prev)));
  absorb(st.finish());
}

struct ToolOut {
  std::string content;
  std::vector<std::string> names, args, final_args;
  bool operator==(const ToolOut&) const = default;
};

ToolOut stream_tools(std::string_view text, const std::vector<size_t>& cuts, int which) {
  ToolCallStream st(schemas(which), counter_ids());
  ToolOut o;
  feed(st, text, cuts, [&](const ToolStreamDelta& d) {
    o.content += d.content;
    for (const auto& c : d.tool_calls) {
      if (c.index < 0 || static_cast<size_t>(c.index) > o.args.size()) __builtin_trap();  // indices go 0, 1, 2...
      if (static_cast<size_t>(c.index) == o.args.size()) {
        o.names.push_back(c.name);
        o.args.emplace_back();
      }
      o.args[c.index] += c.arguments;
    }
  });
  for (const auto& c : st.calls()) o.final_args.push_back(c.arguments);
  return o;
}

struct ReasoningOut {
  std::string reasoning, content;
  bool ended = false;
  bool operator==(const ReasoningOut&) const = default;
};

ReasoningOut stream_reasoning(std::string_view text, const std::vector<size_t>& cuts, bool ended_in_prompt) {
  ReasoningStream rs(ended_in_prompt);
  ReasoningOut o;
  feed(rs, text, cuts, [&](const ReasoningStream::Delta& d) {
    o.reasoning += d.reasoning;
    o.content += d.content;
  });
  o.ended = rs.reasoning_ended();
  return o;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int which = data[0] & 1;
  const bool ended_in_prompt = data[0] & 2;
  const uint64_t seed = data[0] >> 2;
  const std::string_view text = qinfer::fuzz::as_text(data + 1, size - 1);

  (void)parse_tool_calls(text, schemas(which), counter_ids());
  (void)split_reasoning(text, true);
  (void)split_reasoning(text, false);
  (void)prompt_ends_reasoning(text);

  const ToolOut whole = stream_tools(text, {}, which);
  if (whole.args != whole.final_args) __builtin_trap();  // streamed arguments = the final calls
  const ReasoningOut rwhole = stream_reasoning(text, {}, ended_in_prompt);
  for (uint64_t k = 0; k < 4; ++k) {
    const auto cuts = qinfer::fuzz::cuts_from(seed * 4 + k + size, text.size());
    if (!(stream_tools(text, cuts, which) == whole)) __builtin_trap();
    if (!(stream_reasoning(text, cuts, ended_in_prompt) == rwhole)) __builtin_trap();
  }
  // Byte by byte: the finest split.
  std::vector<size_t> all(text.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (text.size() <= 512) {
    if (!(stream_tools(text, all, which) == whole)) __builtin_trap();
    if (!(stream_reasoning(text, all, ended_in_prompt) == rwhole)) __builtin_trap();
  }
  return 0;
}
