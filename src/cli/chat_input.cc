#include "cli/chat_input.h"

#include <editline/readline.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace qinfer::cli {

namespace {
constexpr int kHistoryLines = 1000;
constexpr const char* kBlockFence = "\"\"\"";
}  // namespace

std::string chat_history_path() {
  namespace fs = std::filesystem;
  const char* xdg = std::getenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  fs::path dir;
  if (xdg && *xdg) dir = fs::path(xdg) / "qinfer";
  else if (home && *home) dir = fs::path(home) / ".local" / "state" / "qinfer";
  else return "";
  return (dir / "chat_history").string();
}

ChatInput::ChatInput(bool interactive) : interactive_(interactive) {
  if (!interactive_) return;
  history_path_ = chat_history_path();
  using_history();
  stifle_history(kHistoryLines);
  if (!history_path_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(history_path_).parent_path(), ec);
    if (ec) {
      std::fprintf(stderr, "qinfer chat: history off, cannot create %s: %s\n",
                   std::filesystem::path(history_path_).parent_path().c_str(), ec.message().c_str());
      history_path_.clear();
    } else {
      read_history(history_path_.c_str());  // a missing file is a first run
    }
  }
}

ChatInput::~ChatInput() = default;

std::optional<std::string> ChatInput::read_line(const char* prompt) {
  if (!interactive_) {
    std::fputs(prompt, stdout);
    std::fflush(stdout);
    std::string line;
    if (!std::getline(std::cin, line)) {
      std::cin.clear();
      return std::nullopt;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
  }
  char* raw = readline(prompt);
  if (!raw) return std::nullopt;
  std::string line(raw);
  std::free(raw);
  return line;
}

std::optional<std::string> ChatInput::read_message() {
  std::optional<std::string> first = read_line("> ");
  if (!first) return std::nullopt;
  std::string msg;
  if (*first == kBlockFence) {  // """ ... """
    bool first_line = true;
    for (;;) {
      std::optional<std::string> l = read_line("... ");
      if (!l || *l == kBlockFence) break;
      if (!first_line) msg += '\n';
      msg += *l;
      first_line = false;
    }
  } else {
    std::string line = *first;
    while (!line.empty() && line.back() == '\\') {  // trailing backslash: continue
      line.pop_back();
      msg += line + '\n';
      std::optional<std::string> l = read_line("... ");
      if (!l) { line.clear(); break; }
      line = *l;
    }
    msg += line;
  }
  if (interactive_ && !msg.empty()) {
    add_history(msg.c_str());
    if (!history_path_.empty()) write_history(history_path_.c_str());
  }
  return msg;
}

}  // namespace qinfer::cli
