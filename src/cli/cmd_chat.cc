// qinfer chat --model DIR: an interactive conversation in the terminal.
// Streams the reply; thinking is shown dimmed (or hidden with --hide-thinking);
// /reset starts over, /exit (or Ctrl-D) quits; Ctrl-C stops the reply, not the program.
// /image PATH attaches an image to the next message (an image part before its text).
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

#include "chat/reasoning_parser.h"
#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "cli/image_flags.h"
#include "jinja/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"

namespace qinfer::cli {

namespace {

std::atomic<bool> g_interrupted{false};
void on_sigint(int) { g_interrupted = true; }

}  // namespace

int cmd_chat(int argc, char** argv) {
  auto specs = generation_option_specs();
  for (OptionSpec s : std::vector<OptionSpec>{{"system", true}, {"no-think", false}, {"hide-thinking", false}})
    specs.push_back(s);
  Args a(argc, argv, specs);
  if (a.has("help")) {
    std::fprintf(stderr, "usage: qinfer chat --model DIR [--system TEXT] [--no-think] [--hide-thinking]\n%s"
                         "In the chat: /reset clears the conversation, /image PATH attaches an image to the next message,\n"
                         "/exit or Ctrl-D quits,\n"
                         "Ctrl-C stops the reply being written.\n", generation_flags_help());
    return 0;
  }
  // Qwen's recommended sampling for thinking mode unless overridden.
  engine::GenParams params = gen_params_from_args(a, /*default_temperature=*/0.6);
  if (!a.has("top-p")) params.top_p = 0.95;
  if (!a.has("top-k")) params.top_k = 20;
  if (!a.has("max-tokens")) params.max_tokens = 4096;
  const bool thinking = !a.has("no-think");
  const bool hide_thinking = a.has("hide-thinking");
  const std::string dir = model_dir_from_args(a);
  auto eng = engine::Engine::load(dir, engine_options_from_args(a));
  if (!eng->tokenizer() || !eng->chat_template())
    fail(a.get("model"), ": chat needs tokenizer.json and a chat template in the model folder");

  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  const bool tty = isatty(1) != 0;
  const char* dim = tty ? "\x1b[2m" : "";
  const char* reset = tty ? "\x1b[0m" : "";

  nlohmann::json messages = nlohmann::json::array();
  if (a.has("system")) messages.push_back({{"role", "system"}, {"content", a.get("system")}});
  std::fprintf(stderr, "qinfer chat: /reset clears the conversation, /exit quits, Ctrl-C stops a reply.\n");
  // Every image of the conversation, in prompt order (the whole history is re-rendered
  // each turn), and how many of them wait for the next message.
  std::vector<vision::ImagePatches> images;
  size_t pending_images = 0;
  for (;;) {
    std::fprintf(stdout, "\n> ");
    std::fflush(stdout);
    std::string line;
    g_interrupted = false;
    if (!std::getline(std::cin, line)) {
      if (g_interrupted) {  // Ctrl-C at the prompt: clear the line, keep going
        std::cin.clear();
        continue;
      }
      std::fprintf(stdout, "\n");
      break;
    }
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      nlohmann::json keep = nlohmann::json::array();
      if (a.has("system")) keep.push_back(messages[0]);
      messages = keep;
      images.clear();
      pending_images = 0;
      std::fprintf(stderr, "(conversation cleared)\n");
      continue;
    }
    if (line.rfind("/image", 0) == 0 && (line.size() == 6 || line[6] == ' ')) {
      std::string path = line.size() > 7 ? line.substr(7) : "";
      if (path.empty()) {
        std::fprintf(stderr, "usage: /image PATH\n");
        continue;
      }
      try {
        ImageList one = load_images({path}, dir);
        images.push_back(one->front());
        ++pending_images;
        std::fprintf(stderr, "(image attached to the next message: %s)\n", path.c_str());
      } catch (const Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
      }
      continue;
    }
    if (line.empty()) continue;
    const size_t turn_images = pending_images;
    if (pending_images) {
      nlohmann::json content = nlohmann::json::array();
      for (size_t i = 0; i < pending_images; ++i) content.push_back({{"type", "image"}});
      content.push_back({{"type", "text"}, {"text", line}});
      messages.push_back({{"role", "user"}, {"content", content}});
      pending_images = 0;
    } else {
      messages.push_back({{"role", "user"}, {"content", line}});
    }
    params.images = images.empty() ? nullptr : std::make_shared<const std::vector<vision::ImagePatches>>(images);
    std::string prompt_text = eng->chat_template()->apply(messages, nullptr, true, {{"enable_thinking", thinking}});
    std::vector<int> prompt = eng->tokenizer()->encode(prompt_text, true);
    chat::ReasoningStream split(chat::prompt_ends_reasoning(prompt_text));
    std::string reply;  // everything generated, for the history
    bool in_thinking_style = false;
    bool noted_hidden = false;  // hidden thinking still shows that the model is at work
    auto show = [&](const chat::ReasoningStream::Delta& d) {
      if (!d.reasoning.empty() && hide_thinking && !noted_hidden) {
        std::fputs(dim, stdout), std::fputs("(thinking...)", stdout), std::fputs(reset, stdout);
        std::fputs("\n", stdout);
        noted_hidden = true;
      }
      if (!d.reasoning.empty() && !hide_thinking) {
        if (!in_thinking_style) std::fputs(dim, stdout), in_thinking_style = true;
        std::fputs(d.reasoning.c_str(), stdout);
      }
      if (!d.content.empty()) {
        if (in_thinking_style) std::fputs(reset, stdout), std::fputs("\n", stdout), in_thinking_style = false;
        std::fputs(d.content.c_str(), stdout);
      }
      std::fflush(stdout);
    };
    g_interrupted = false;
    engine::GenResult r;
    try {
      r = eng->generate(prompt, params, [&](const engine::GenEvent& ev) {
        reply += ev.text;
        show(split.push(ev.text));
        return !g_interrupted.load();
      });
    } catch (const Error& e) {   // the request was refused (e.g. images without a tower): drop the turn
      std::fprintf(stderr, "error: %s\n", e.what());
      messages.erase(messages.size() - 1);
      images.resize(images.size() - turn_images);
      continue;
    }
    show(split.finish());
    if (in_thinking_style) std::fputs(reset, stdout);
    if (r.reason == engine::FinishReason::kError) log_error(r.error);
    if (g_interrupted) std::fprintf(stderr, "\n(reply stopped)");
    // History keeps the final answer; the template drops old reasoning anyway.
    chat::ReasoningSplit parts = chat::split_reasoning(reply, thinking);
    nlohmann::json msg = {{"role", "assistant"}, {"content", parts.content.value_or("")}};
    if (parts.reasoning) msg["reasoning_content"] = *parts.reasoning;
    messages.push_back(msg);
    std::fprintf(stdout, "\n");
  }
  return 0;
}

}  // namespace qinfer::cli
