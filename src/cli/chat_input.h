// Reading what the user types in `qinfer chat`: libedit line editing with a
// history file when standard input is a terminal, plain lines otherwise (pipes,
// tests). Multi-line messages: a line ending in a backslash continues on the
// next line, and a line that is just """ opens a block closed by another """.
#pragma once
#include <optional>
#include <string>

namespace qinfer::cli {

class ChatInput {
 public:
  // interactive: use libedit and the history file (standard input is a TTY).
  explicit ChatInput(bool interactive);
  ~ChatInput();
  ChatInput(const ChatInput&) = delete;
  ChatInput& operator=(const ChatInput&) = delete;

  // One message (possibly several lines); nullopt at end of input or when a
  // signal (Ctrl-C) interrupted the read: the caller tells the two apart.
  std::optional<std::string> read_message();
  bool interactive() const { return interactive_; }
  const std::string& history_path() const { return history_path_; }

 private:
  std::optional<std::string> read_line(const char* prompt);
  bool interactive_;
  std::string history_path_;  // empty when history is off
};

// Where the history lives: $XDG_STATE_HOME/qinfer/chat_history, else ~/.local/state/qinfer/chat_history.
std::string chat_history_path();

}  // namespace qinfer::cli
