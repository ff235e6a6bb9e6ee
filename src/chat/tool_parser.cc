#include "chat/tool_parser.h"

#include <random>

#include "chat/reasoning_parser.h"
#include "chat/text_util.h"
#include "chat/tool_xml.h"

namespace qinfer::chat {

std::string make_tool_call_id() {
  thread_local std::mt19937_64 rng{std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32)};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "chatcmpl-tool-";
  uint64_t r = rng();
  for (int i = 0; i < 16; ++i, r >>= 4) id += kHex[r & 15];
  return id;
}

ToolParseResult parse_tool_calls(std::string_view text, const ToolSchemas& tools, const ToolCallIdGenerator& ids) {
  ToolParseResult res;
  if (text.find(xml::kFunctionPrefix) == xml::npos) {
    res.content = std::string(text);
    return res;
  }
  try {
    const auto blocks = xml::split_function_calls(text, tools);
    if (blocks.empty()) {
      res.content = std::string(text);
      return res;
    }
    std::vector<xml::ParsedCall> parsed;
    std::vector<std::string> args;
    for (std::string_view fn : blocks) {
      if (auto call = xml::parse_function(fn, tools)) {
        args.push_back(py_json_dumps(call->arguments()));
        parsed.push_back(std::move(*call));
      }
    }
    for (size_t i = 0; i < parsed.size(); ++i) res.tool_calls.push_back({ids(), parsed[i].name, args[i]});

    // Content ends at the first <tool_call> that holds a "<function=" (before its first
    // </tool_call>); a bare <tool_call>...</tool_call> in the prose stays content.
    size_t content_end = xml::npos;
    for (size_t search = 0;;) {
      const size_t tc = text.find(kToolCallStart, search);
      if (tc == xml::npos) break;
      const size_t close = text.find(kToolCallEnd, tc + kToolCallStart.size());
      const size_t limit = close != xml::npos ? close : text.size();
      if (find_in(text, xml::kFunctionPrefix, tc + kToolCallStart.size(), limit) != xml::npos) {
        content_end = tc;
        break;
      }
      search = close != xml::npos ? close + kToolCallEnd.size() : limit;
    }
    if (content_end == xml::npos) content_end = text.find(xml::kFunctionPrefix);
    if (content_end > 0) res.content = std::string(text.substr(0, content_end));
    return res;
  } catch (const ToolValueOverflow&) {
  } catch (const JsonDumpError&) {
  }
  ToolParseResult fallback;
  fallback.content = std::string(text);
  return fallback;
}

}  // namespace qinfer::chat
