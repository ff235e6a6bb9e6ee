// qinfer chat --model DIR: an interactive conversation in the terminal.
// Streams the reply; thinking is shown dimmed (or hidden with --hide-thinking).
// Input and line editing: chat_input.h; the /commands (among them /image PATH, which
// attaches an image to the next message): chat_commands.h.
// Ctrl-C stops the reply, not the program.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

#include "chat/reasoning_parser.h"
#include "cli/chat_commands.h"
#include "cli/chat_input.h"
#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "jinja/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"

namespace qinfer::cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }

}  // namespace

int cmd_chat(int argc, char** argv) {
  auto specs = generation_option_specs();
  for (OptionSpec s : std::vector<OptionSpec>{{"system", true}, {"no-think", false}, {"hide-thinking", false}})
    specs.push_back(s);
  Args a(argc, argv, specs);
  if (a.has("help")) {
    std::fprintf(stderr, "usage: qinfer chat --model DIR [--system TEXT] [--no-think] [--hide-thinking]\n%s",
                 generation_flags_help());
    ChatState none;
    std::string help = "/help";
    run_chat_command(none, help);
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
  const engine::EngineOptions eo = engine_options_from_args(a);
  auto eng = engine::Engine::load(dir, eo);
  if (!eng->tokenizer() || !eng->chat_template())
    fail(a.get("model"), ": chat needs tokenizer.json and a chat template in the model folder");

  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  const bool tty = isatty(1) != 0;
  const char* dim = tty ? "\x1b[2m" : "";
  const char* reset = tty ? "\x1b[0m" : "";

  ChatState st;
  st.model_dir = dir;
  if (a.has("system")) st.system = a.get("system");
  ChatInput input(isatty(0) != 0);
  std::fprintf(stderr, "qinfer chat: /help lists the commands, /exit quits, Ctrl-C stops a reply.\n");
  while (!st.quit) {
    std::fprintf(stdout, "\n");
    g_interrupted = 0;
    std::optional<std::string> got = input.read_message();
    if (!got && g_interrupted) got = "";  // Ctrl-C at the prompt: clear the line, keep going
    if (!got) {
      std::fprintf(stdout, "\n");
      break;
    }
    std::string line = *got;
    if (run_chat_command(st, line)) continue;
    if (line.empty()) continue;
    const size_t turn_images = st.pending_images;
    if (st.pending_images) {  // image parts before the text, as an OpenAI message holds them
      nlohmann::json content = nlohmann::json::array();
      for (size_t i = 0; i < st.pending_images; ++i) content.push_back({{"type", "image"}});
      content.push_back({{"type", "text"}, {"text", line}});
      st.messages.push_back({{"role", "user"}, {"content", content}});
      st.pending_images = 0;
    } else {
      st.messages.push_back({{"role", "user"}, {"content", line}});
    }
    params.images =
        st.images.empty() ? nullptr : std::make_shared<const std::vector<vision::ImagePatches>>(st.images);
    std::string prompt_text = eng->chat_template()->apply(st.conversation(), nullptr, true, {{"enable_thinking", thinking}});
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
    g_interrupted = 0;
    const engine::SpecDecodeStats spec_before = eng->stats().spec;
    engine::GenResult r;
    try {
      r = eng->generate(prompt, params, [&](const engine::GenEvent& ev) {
        reply += ev.text;
        show(split.push(ev.text));
        return g_interrupted == 0;
      });
    } catch (const Error& e) {  // the request was refused (e.g. images without a tower): drop the turn
      std::fprintf(stderr, "error: %s\n", e.what());
      st.messages.erase(st.messages.size() - 1);
      st.images.resize(st.images.size() - turn_images);
      continue;
    }
    show(split.finish());
    if (in_thinking_style) std::fputs(reset, stdout);
    if (r.reason == engine::FinishReason::kError) log_error(r.error);
    if (g_interrupted) std::fprintf(stderr, "\n(reply stopped)");
    if (eo.spec.enabled()) {   // this reply's drafts, as `generate` logs them for its one reply
      std::fflush(stdout);
      std::fputs("\n", stderr);
      log_info(eng->stats().spec.since(spec_before).summary());
    }
    // History keeps the final answer; the template drops old reasoning anyway.
    chat::ReasoningSplit parts = chat::split_reasoning(reply, thinking);
    nlohmann::json msg = {{"role", "assistant"}, {"content", parts.content.value_or("")}};
    if (parts.reasoning) msg["reasoning_content"] = *parts.reasoning;
    st.messages.push_back(msg);
    std::fprintf(stdout, "\n");
  }
  return 0;
}

}  // namespace qinfer::cli
