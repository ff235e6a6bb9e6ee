// The qwen3 reasoning parser (vLLM `--reasoning-parser qwen3`, Qwen3ReasoningParser): splits
// generated text into reasoning and content. The Qwen3.5/3.6 template puts "<think>\n" in the
// prompt, so the output is normally "reasoning</think>\n\ncontent" without an opening tag.
// Qwen3.5 may also open a tool call inside its thinking without "</think>": a "<tool_call>"
// followed (after whitespace) by "<function=" or "<function " ends the reasoning implicitly.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "chat/chat_format.h"  // kThinkStart, kThinkEnd, kToolCallStart, kToolCallEnd

namespace qinfer::chat {

struct ReasoningSplit {
  std::optional<std::string> reasoning;  // nullopt: vLLM's None
  std::optional<std::string> content;
};

// Non-streaming (vLLM extract_reasoning), for the whole generated text:
//  1. a "<think>" in the output: everything up to and including the first one is dropped;
//  2. "</think>" present: reasoning = text before the first one (possibly ""), content = the
//     rest (nullopt if empty); nothing is stripped;
//  3. else thinking disabled (chat_template_kwargs.enable_thinking == false): all content;
//  4. else the first "<tool_call>" followed by "<function[\s=]" (after whitespace) ends the
//     reasoning: reasoning = text before it (nullopt if empty), content = from it on;
//  5. else (truncated thinking): reasoning = everything, content nullopt.
ReasoningSplit split_reasoning(std::string_view text, bool thinking_enabled = true);

// vLLM is_reasoning_end applied to the rendered prompt: scanning backwards, "<think>" means
// no, "</think>" means yes, and an unpaired "<tool_call>" followed by "<function[\s=]" means
// yes. True for the enable_thinking=false prompt (it ends in "<think>\n\n</think>\n\n"); then
// the whole output is content and ReasoningStream should be built with that flag.
bool prompt_ends_reasoning(std::string_view prompt_text);

// Streaming: fed the generated text in arbitrary pieces (tags may be split anywhere, e.g.
// "</thi" + "nk>"), it returns per push the newly known reasoning and content text. Text that
// might be the start of a tag is held back until it is resolved; finish() releases the rest.
// The concatenated output equals split_reasoning() of the whole text, except where vLLM's own
// streaming differs from its non-streaming path: a "<think>" is only removed (as a tag) rather
// than dropping the text before it, unless it opens the output; and once a tool call has
// ended the reasoning, a later "</think>" stays in the content.
class ReasoningStream {
 public:
  struct Delta {
    std::string reasoning;
    std::string content;
    bool empty() const { return reasoning.empty() && content.empty(); }
  };

  // reasoning_ended_in_prompt: prompt_ends_reasoning(prompt) (e.g. enable_thinking=false);
  // then everything is content, as vLLM's serving layer routes it.
  explicit ReasoningStream(bool reasoning_ended_in_prompt = false);

  Delta push(std::string_view delta);
  Delta finish();

  // True once "</think>" or an implicit tool-call end has been seen (or the prompt ended it).
  bool reasoning_ended() const { return mode_ == Mode::kContent; }

 private:
  enum class Mode { kStart, kReasoning, kContent };
  void process(Delta& out, bool at_end);

  Mode mode_;
  std::string pending_;             // text not yet classified
  std::string utf8_tail_;           // the start of a character whose last bytes have not come yet
  bool tool_call_checked_ = false;  // the first "<tool_call>" was judged not to end reasoning
};

}  // namespace qinfer::chat
