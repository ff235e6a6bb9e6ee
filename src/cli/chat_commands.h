// The slash commands of `qinfer chat` (/help, /reset, /system, /image, /save,
// /load, /exit) and the conversation state they act on. One table entry per command:
// adding a command is adding a row to chat_commands() in chat_commands.cc.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vision/preprocess.h"

namespace qinfer::cli {

struct ChatState {
  std::optional<std::string> system;                       // the system prompt, if any
  nlohmann::json messages = nlohmann::json::array();       // user/assistant turns (no system)
  bool quit = false;
  std::string model_dir;  // /image reads preprocessor_config.json from it
  // Every image of the conversation, in prompt order (the whole history is re-rendered
  // each turn), and how many of them wait for the next message.
  std::vector<vision::ImagePatches> images;
  size_t pending_images = 0;
  // The messages the chat template sees: the system prompt first, then the turns.
  nlohmann::json conversation() const;
};

struct ChatCommand {
  std::string name;   // without the slash
  std::string args;   // shown in /help, e.g. "FILE"
  std::string help;
  std::function<void(ChatState&, const std::string& arg)> run;  // throws qinfer::Error on bad input
};

const std::vector<ChatCommand>& chat_commands();

// Runs `line` when it is a command ("/name arg"); returns false when it is a
// message for the model. "//text" sends "/text"; an unknown /command is reported on stderr.
bool run_chat_command(ChatState& st, std::string& line);

// OpenAI-shaped messages: a JSON array of {"role", "content"}; /load also accepts {"messages": [...]}.
void save_conversation(const ChatState& st, const std::string& path);
void load_conversation(ChatState& st, const std::string& path);

}  // namespace qinfer::cli
