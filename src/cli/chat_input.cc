#include "cli/chat_input.h"

#include <editline/readline.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <deque>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace qinfer::cli {

namespace {
constexpr int kHistoryLines = 1000;
constexpr const char* kBlockFence = "\"\"\"";

// Bracketed paste: the terminal wraps pasted text in ESC[200~ ... ESC[201~. The
// reader below takes a paste out of the key stream: one without newlines is typed
// into the line as is; one with newlines ends the line, and the whole paste joins
// the message (read_message appends it), so a pasted block is one message.
const std::string kPasteStart = "\x1b[200~", kPasteEnd = "\x1b[201~";
std::deque<unsigned char> g_pending;  // bytes read ahead, handed to libedit first
std::string g_paste;                  // a multi-line paste waiting for read_message
bool g_have_paste = false;

int read_byte() {
  unsigned char c;
  for (;;) {
    ssize_t n = ::read(0, &c, 1);
    if (n == 1) return c;
    if (n < 0 && errno == EINTR) return EOF;  // Ctrl-C: the caller sees the interrupt flag
    if (n <= 0) return EOF;
  }
}

int paste_aware_getc(FILE*) {
  if (!g_pending.empty()) {
    int c = g_pending.front();
    g_pending.pop_front();
    return c;
  }
  int c = read_byte();
  if (c != 0x1b) return c;
  std::string seen(1, '\x1b');
  while (seen.size() < kPasteStart.size() && kPasteStart.compare(0, seen.size(), seen) == 0) {
    int d = read_byte();
    if (d == EOF) break;
    seen += static_cast<char>(d);
  }
  if (seen != kPasteStart) {  // another escape sequence (arrows...): pass it on untouched
    for (size_t i = 1; i < seen.size(); ++i) g_pending.push_back(static_cast<unsigned char>(seen[i]));
    return c;
  }
  std::string paste;
  for (;;) {
    int d = read_byte();
    if (d == EOF) break;
    paste += static_cast<char>(d);
    if (paste.size() >= kPasteEnd.size() && paste.compare(paste.size() - kPasteEnd.size(), kPasteEnd.size(), kPasteEnd) == 0) {
      paste.resize(paste.size() - kPasteEnd.size());
      break;
    }
  }
  for (char& ch : paste) if (ch == '\r') ch = '\n';
  if (paste.find('\n') == std::string::npos) {
    for (char ch : paste) g_pending.push_back(static_cast<unsigned char>(ch));
  } else {
    g_paste = paste;
    g_have_paste = true;
    g_pending.push_back('\n');
  }
  return paste_aware_getc(nullptr);
}

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
  rl_getc_function = paste_aware_getc;
  rl_initialize();
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
  g_have_paste = false;
  std::fputs("\x1b[?2004h", stdout);  // bracketed paste on while reading, off while the model writes
  std::fflush(stdout);
  char* raw = readline(prompt);
  std::fputs("\x1b[?2004l", stdout);
  std::fflush(stdout);
  if (!raw) return std::nullopt;
  std::string line(raw);
  std::free(raw);
  if (g_have_paste) {
    std::string paste = g_paste;
    while (!paste.empty() && paste.back() == '\n') paste.pop_back();
    std::fputs(paste.c_str(), stdout);  // libedit did not echo it
    std::fputs("\n", stdout);
    line += paste;
  }
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
