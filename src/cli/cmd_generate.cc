// qinfer generate: one completion, from token ids or from text.
//   qinfer generate --model DIR --ids 3,1,4 --max-tokens N --temperature 0 --print-ids
//     prints the generated ids, comma-separated, on one line of stdout. Id mode is
//     the raw token interface: it runs exactly --max-tokens steps and does not stop
//     at an EOS id unless --stop-at-eos is given (the golden greedy runs do not stop).
//   qinfer generate --model DIR --prompt "text" [--chat] [sampling flags]
//     streams the generated text to stdout; --chat wraps the prompt as one user
//     turn with the model's chat template (--no-think turns thinking off).
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "cli/image_flags.h"
#include "jinja/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"

namespace qinfer::cli {

int cmd_generate(int argc, char** argv) {
  auto specs = generation_option_specs();
  for (OptionSpec s : std::vector<OptionSpec>{{"ids", true}, {"prompt", true}, {"print-ids", false},
                                              {"chat", false}, {"no-think", false}, {"stop-at-eos", false},
                                              {"image", true, true}})
    specs.push_back(s);
  Args a(argc, argv, specs);
  if (a.has("help")) {
    std::fprintf(stderr, "usage: qinfer generate --model DIR (--ids 3,1,4 | --prompt TEXT [--chat] [--no-think]) [--image FILE ...] [--print-ids]\n"
                 "  --ids mode runs exactly --max-tokens steps unless --stop-at-eos is given.\n"
                 "  --image (repeatable): with --ids, the ids hold one image_token_id per image, in flag order;\n"
                 "  with --prompt, the images come before the text (--chat: as image parts of the user turn).\n%s",
                 generation_flags_help());
    return 0;
  }
  if (a.has("ids") == a.has("prompt")) fail("give exactly one of --ids or --prompt");
  engine::GenParams params = gen_params_from_args(a, /*default_temperature=*/0.0);
  std::vector<int> prompt;
  if (a.has("ids")) prompt = parse_int_list(a.get("ids"), "--ids");  // before the slow load
  const std::string dir = model_dir_from_args(a);
  params.images = load_images(a.get_all("image"), dir);   // before the slow load
  const size_t n_images = params.images ? params.images->size() : 0;
  const engine::EngineOptions eo = engine_options_from_args(a);
  auto eng = engine::Engine::load(dir, eo);

  if (a.has("ids")) {
    if (!a.has("stop-at-eos")) params.ignore_eos = true;
  } else {
    if (!eng->tokenizer()) fail(a.get("model"), ": the folder has no tokenizer.json, so --prompt cannot be used (use --ids)");
    std::string text = a.get("prompt");
    if (a.has("chat")) {
      if (!eng->chat_template()) fail(a.get("model"), ": the folder has no chat template, so --chat cannot be used");
      nlohmann::json content = text;
      if (n_images) {
        content = nlohmann::json::array();
        for (size_t i = 0; i < n_images; ++i) content.push_back({{"type", "image"}});
        content.push_back({{"type", "text"}, {"text", text}});
      }
      nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", content}}});
      nlohmann::json kwargs = {{"enable_thinking", !a.has("no-think")}};
      text = eng->chat_template()->apply(messages, nullptr, true, kwargs);
    } else if (n_images && text.find("<|image_pad|>") == std::string::npos) {
      text = image_placeholders(n_images) + text;
    }
    prompt = eng->tokenizer()->encode(text, /*parse_special=*/a.has("chat") || n_images > 0);
  }
  const bool print_ids = a.has("print-ids");
  double t0 = now_seconds();
  engine::GenResult r = eng->generate(prompt, params, [&](const engine::GenEvent& ev) {
    if (!print_ids && !ev.text.empty()) {
      std::fwrite(ev.text.data(), 1, ev.text.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  });
  if (r.reason == engine::FinishReason::kError) fail(r.error);
  double dt = now_seconds() - t0;
  if (print_ids) {
    std::string line;
    for (size_t i = 0; i < r.tokens.size(); ++i) line += (i ? "," : "") + std::to_string(r.tokens[i]);
    std::printf("%s\n", line.c_str());
  } else {
    std::printf("\n");
  }
  std::fflush(stdout);  // the text and its newline come before the summary on stderr
  log_info(r.prompt_tokens, " prompt tokens, ", r.completion_tokens, " generated in ", dt, " s (finish: ",
           engine::finish_reason_name(r.reason), ")");
  if (eo.spec.enabled()) log_info(eng->stats().spec.summary());
  return 0;
}

}  // namespace qinfer::cli
