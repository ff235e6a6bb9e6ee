// The qwen3_coder tool-call parser (vLLM `--tool-call-parser qwen3_coder`) for the content
// part of a Qwen3.5/3.6 answer (after the reasoning parser):
//   optional text, then blocks
//   <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>\n</tool_call>
// Values are converted against the tool's JSON schema (see tool_schema.h) and arguments are
// written as Python's json.dumps(dict, ensure_ascii=False): {"city": "Paris", "days": 2}.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_schema.h"

namespace qinfer::chat {

struct ToolCall {
  std::string id;         // "chatcmpl-tool-<16 hex>"
  std::string name;
  std::string arguments;  // JSON object text
};

// Makes tool-call ids. The default draws "chatcmpl-tool-" + 16 random hex digits (what vLLM's
// serving layer assigns); tests inject a deterministic one.
using ToolCallIdGenerator = std::function<std::string()>;
std::string make_tool_call_id();

struct ToolParseResult {
  std::optional<std::string> content;  // text before the first tool call; nullopt if empty
  std::vector<ToolCall> tool_calls;
};

// Non-streaming (vLLM extract_tool_calls). Never throws on model output: anything vLLM would
// fail on yields no tool calls and the whole text as content.
ToolParseResult parse_tool_calls(std::string_view text, const ToolSchemas& tools,
                                 const ToolCallIdGenerator& ids = make_tool_call_id);

// One OpenAI streaming tool-call fragment. The first fragment of a call carries id and name
// (and arguments "{" plus whatever is already complete); later ones only argument text.
struct ToolCallDelta {
  int index = 0;
  std::string id;
  std::string name;
  std::string arguments;
};

struct ToolStreamDelta {
  std::string content;
  std::vector<ToolCallDelta> tool_calls;  // at most one entry per index, in index order
  bool empty() const { return content.empty() && tool_calls.empty(); }
};

// Streaming: fed the content text in arbitrary pieces (tags may be split anywhere). Content
// before a "<tool_call>" streams at once except a trailing partial "<tool_call" prefix; each
// call's header goes out when "<function=NAME>" is complete, each parameter when its
// structural close is seen, and the closing "}" when the call's block ends. A call's
// streamed arguments concatenate to the non-streaming arguments for the same block.
// Differences from vLLM's streaming (all about malformed output): a call whose name vLLM
// would reject is skipped; a block without "<function=" is streamed as content; an
// unfinished call at finish() is completed from its text as the non-streaming parser does;
// whitespace-only text between or after calls is dropped regardless of how it was split;
// a duplicated parameter name streams every value in text order (however the text was split).
// The emitted result never depends on the split (tests/chat/split_property_test.cc): a value
// streams early only when it holds no tag and its close's lookahead is complete; a function's
// extent is cut as split_function_calls cuts it; anything undecided waits.
class ToolCallStream {
 public:
  explicit ToolCallStream(ToolSchemas tools, ToolCallIdGenerator ids = make_tool_call_id);

  ToolStreamDelta push(std::string_view delta);
  ToolStreamDelta finish();

  // Every call emitted so far with its complete arguments (once its block has ended).
  const std::vector<ToolCall>& calls() const { return calls_; }
  bool any_call_started() const { return next_index_ > 0 || header_sent_; }

 private:
  void process(ToolStreamDelta& out, bool at_end);
  bool process_call(ToolStreamDelta& out, bool at_end);
  void emit_args(ToolStreamDelta& out, std::string_view text);
  void stream_params(ToolStreamDelta& out, std::string_view body);
  void end_call(ToolStreamDelta& out, size_t block_end);

  ToolSchemas tools_;
  ToolCallIdGenerator ids_;
  std::string text_;
  std::string utf8_tail_;     // the start of a character whose last bytes have not come yet
  size_t sent_ = 0;           // text_ before this is emitted or consumed
  bool after_call_ = false;   // the last thing consumed was a tool-call block
  int next_index_ = 0;
  std::vector<ToolCall> calls_;
  // The call being read.
  bool in_call_ = false;
  size_t call_start_ = 0;     // offset of its "<tool_call>"
  bool header_seen_ = false;  // "<function=NAME>" complete
  bool header_sent_ = false;  // ... and the name was valid, so it was emitted
  std::string id_, name_;
  size_t body_start_ = 0;     // offset just after "<function=NAME>"
  size_t param_pos_ = 0;      // body offset where the next parameter search starts
  size_t params_emitted_ = 0;
  bool params_blocked_ = false;  // a value with tags inside: the rest waits for the block's end
  std::string streamed_args_;
  NameSet names_;
  bool has_props_ = false;
};

}  // namespace qinfer::chat
