#include "cli/chat_commands.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/image_flags.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace qinfer::cli {

nlohmann::json ChatState::conversation() const {
  nlohmann::json all = nlohmann::json::array();
  if (system) all.push_back({{"role", "system"}, {"content", *system}});
  for (const auto& m : messages) all.push_back(m);
  return all;
}

void save_conversation(const ChatState& st, const std::string& path) {
  if (path.empty()) throw Error("/save needs a file name: /save FILE");
  nlohmann::ordered_json out = nlohmann::ordered_json::array();  // "role" before "content", as OpenAI writes them
  for (const auto& m : st.conversation()) {
    nlohmann::ordered_json msg;
    msg["role"] = m["role"];
    msg["content"] = m["content"];
    out.push_back(msg);
  }
  std::ofstream f(path);
  if (!f) throw Error(cat(path, ": cannot open for writing"));
  f << out.dump(2) << "\n";
  if (!f.flush()) throw Error(cat(path, ": write failed"));
}

void load_conversation(ChatState& st, const std::string& path) {
  if (path.empty()) throw Error("/load needs a file name: /load FILE");
  if (!std::filesystem::exists(path)) throw Error(cat(path, ": cannot open (does it exist?)"));
  nlohmann::json j = read_json_file(path);  // errors name the file
  if (j.is_object() && j.contains("messages")) j = j["messages"];
  if (!j.is_array()) throw Error(cat(path, ": expected a JSON array of messages (or {\"messages\": [...]})"));
  ChatState next;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& m = j[i];
    std::string where = cat(path, ": messages[", i, "]");
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw Error(cat(where, ": needs a string \"role\""));
    std::string role = m["role"];
    if (!m.contains("content") || !m["content"].is_string())
      throw Error(cat(where, ".content: needs a string"));
    if (role == "system" && i == 0) next.system = m["content"].get<std::string>();
    else if (role == "user" || role == "assistant")
      next.messages.push_back({{"role", role}, {"content", m["content"]}});
    else
      throw Error(cat(where, ".role: '", role, "' is not user or assistant (system only as the first message)"));
  }
  st.system = next.system;
  st.messages = next.messages;
  st.images.clear();  // a saved conversation holds no image data
  st.pending_images = 0;
}

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

void print_help(ChatState&, const std::string&) {
  std::fprintf(stderr, "Commands:\n");
  for (const auto& c : chat_commands()) {
    std::string head = "/" + c.name + (c.args.empty() ? "" : " " + c.args);
    std::fprintf(stderr, "  %-16s %s\n", head.c_str(), c.help.c_str());
  }
  std::fprintf(stderr,
               "Multi-line input: end a line with \\ to continue it, or type \"\"\" on a line of its own,\n"
               "then the text, then \"\"\" again. Start a message with // to send a literal /.\n"
               "Ctrl-C stops a reply; Ctrl-D or /exit quits.\n");
}

}  // namespace

const std::vector<ChatCommand>& chat_commands() {
  static const std::vector<ChatCommand> table = {
      {"help", "", "list the commands", print_help},
      {"reset", "", "clear the conversation (the system prompt stays)",
       [](ChatState& st, const std::string&) {
         st.messages = nlohmann::json::array();
         st.images.clear();
         st.pending_images = 0;
         std::fprintf(stderr, "(conversation cleared)\n");
       }},
      {"system", "[TEXT]", "set the system prompt; with no text, remove it",
       [](ChatState& st, const std::string& arg) {
         if (arg.empty()) st.system.reset(), std::fprintf(stderr, "(system prompt removed)\n");
         else st.system = arg, std::fprintf(stderr, "(system prompt set)\n");
       }},
      {"image", "PATH", "attach an image (PNG, JPEG, WebP, GIF) to the next message",
       [](ChatState& st, const std::string& arg) {
         if (arg.empty()) throw Error("/image needs a file name: /image PATH");
         ImageList one = load_images({arg}, st.model_dir);
         st.images.push_back(one->front());
         ++st.pending_images;
         std::fprintf(stderr, "(image attached to the next message: %s)\n", arg.c_str());
       }},
      {"save", "FILE", "write the conversation as JSON messages",
       [](ChatState& st, const std::string& arg) {
         save_conversation(st, arg);
         std::fprintf(stderr, "(saved %zu messages to %s)\n", st.conversation().size(), arg.c_str());
       }},
      {"load", "FILE", "replace the conversation with JSON messages from FILE",
       [](ChatState& st, const std::string& arg) {
         load_conversation(st, arg);
         std::fprintf(stderr, "(loaded %zu messages from %s)\n", st.conversation().size(), arg.c_str());
       }},
      {"exit", "", "quit (also /quit, Ctrl-D)", [](ChatState& st, const std::string&) { st.quit = true; }},
      {"quit", "", "quit", [](ChatState& st, const std::string&) { st.quit = true; }},
  };
  return table;
}

bool run_chat_command(ChatState& st, std::string& line) {
  if (line.empty() || line[0] != '/') return false;
  if (line.size() > 1 && line[1] == '/') {  // "//text": a message starting with '/'
    line.erase(0, 1);
    return false;
  }
  size_t sp = line.find_first_of(" \t");
  std::string name = line.substr(1, sp == std::string::npos ? std::string::npos : sp - 1);
  std::string arg = sp == std::string::npos ? "" : trim(line.substr(sp));
  for (const auto& c : chat_commands()) {
    if (c.name != name) continue;
    try {
      c.run(st, arg);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
    }
    return true;
  }
  std::fprintf(stderr, "unknown command /%s (not sent to the model); /help lists the commands\n", name.c_str());
  return true;
}

}  // namespace qinfer::cli
