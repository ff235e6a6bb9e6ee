// ChatFormat: everything that is "the Qwen3.5/3.6 chat format" in one object — the end of a
// turn, the thinking block's markers, the opening of a tool call, and the tokens a generation
// stops at — so the generic layers stay format-agnostic: the engine takes its stop tokens from
// here (Engine::chat_format()), the server its forced tool-call opening, the think-end token it
// starts a grammar after, and the end-of-turn it cuts for continue_final_message.
//
// Where the model folder says it, the value is read from there (ChatFormat::load): the end of
// turn is tokenizer_config.json's eos_token (the template closes each message with it and the
// model ends its reply with it), the end of text its pad_token (Qwen's <|endoftext|>). The
// thinking and tool-call markers are what chat_template.jinja writes (its generation prompt
// "<think>\n" or "<think>\n\n</think>\n\n", its tool calls "<tool_call>\n<function=NAME>\n");
// the reasoning and tool-call parsers (reasoning_parser.h, tool_parser.h) read the same
// markers back from the output, so the constants below are shared with them.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer::chat {

// The tags of the Qwen3.5 output, as the template writes them and the parsers find them.
inline constexpr std::string_view kThinkStart = "<think>";
inline constexpr std::string_view kThinkEnd = "</think>";
inline constexpr std::string_view kToolCallStart = "<tool_call>";
inline constexpr std::string_view kToolCallEnd = "</tool_call>";

struct ChatFormat {
  std::string turn_end = "<|im_end|>";        // tokenizer_config.json eos_token
  std::string end_of_text = "<|endoftext|>";  // tokenizer_config.json pad_token
  std::string think_end = std::string(kThinkEnd);
  // What the template writes after a closed thinking block ("\n</think>\n\n"): the part a
  // forced tool call writes itself when the prompt left thinking open.
  std::string think_close = std::string(kThinkEnd) + "\n\n";
  // The opening of a tool call up to the function name, and what follows the name.
  std::string tool_call_open = std::string(kToolCallStart) + "\n<function=";
  std::string function_name_end = ">\n";

  // The format of the model folder `dir`: the defaults above, with the token strings
  // tokenizer_config.json names (eos_token, pad_token) in their place. A folder without that
  // file (or without those fields) keeps the defaults; a malformed file throws Error.
  static ChatFormat load(const std::string& dir);

  // The token strings every generation stops at (the engine adds the ids the tokenizer has
  // to the checkpoint's eos ids): the end of turn and the end of text.
  std::vector<std::string> stop_tokens() const { return {turn_end, end_of_text}; }

  // The text written after the prompt to force a tool call (tool_choice "required" or a
  // named function): the thinking block closed first when the prompt left it open, then the
  // tool-call opening, then `function` and the end of its name when one is named
  // (nullopt: "required", the model picks the function).
  std::string forced_tool_call(bool close_thinking, std::optional<std::string_view> function) const;

  // continue_final_message: the prompt without the end of turn (and its newline) the
  // template closed the last message with; unchanged when it does not end in one.
  std::string without_turn_end(std::string prompt) const;
};

}  // namespace qinfer::chat
