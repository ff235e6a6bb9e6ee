// The Jinja engine: a template and, after a "\n---context---\n" line, its JSON context
// ({"messages": ..., "tools": ..., "add_generation_prompt": ..., other keys as kwargs}).
// An input without a template part renders the repository's Qwen3.5 chat template with
// the fuzzed context, as the server does with a request's messages and tools.
#include <fstream>
#include <sstream>

#include "fuzz_util.h"
#include "jinja/chat_template.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace {
const qinfer::ChatTemplate& qwen_template() {
  static const qinfer::ChatTemplate t = qinfer::ChatTemplate::load(QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5");
  return t;
}
}  // namespace

// Loaded once before fuzzing starts, so the per-input timeout does not count the set-up.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)qwen_template();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace f = qinfer::fuzz;
  using ojson = nlohmann::ordered_json;
  const auto [source, context_text] = f::split_at(f::as_text(data, size), "\n---context---\n");
  try {
    ojson ctx = context_text.empty() ? ojson::object() : qinfer::parse_ordered_json(context_text, "context");
    if (!ctx.is_object()) ctx = ojson{{"messages", ctx}};
    ojson messages = ctx.contains("messages") ? ctx["messages"] : ojson::array({{{"role", "user"}, {"content", "hi"}}});
    ojson tools = ctx.contains("tools") ? ctx["tools"] : ojson();
    const bool gen = ctx.contains("add_generation_prompt") && ctx["add_generation_prompt"].is_boolean()
                         ? ctx["add_generation_prompt"].get<bool>()
                         : true;
    ojson kwargs = ojson::object();
    for (auto it = ctx.begin(); it != ctx.end(); ++it)
      if (it.key() != "messages" && it.key() != "tools" && it.key() != "add_generation_prompt")
        kwargs[it.key()] = it.value();
    if (source.empty()) {
      (void)qwen_template().apply(messages, tools, gen, kwargs);
    } else {
      const auto t = qinfer::ChatTemplate::from_string(std::string(source), "fuzz.jinja");
      (void)t.apply(messages, tools, gen, kwargs);
    }
  } catch (const qinfer::Error&) {
  }
  return 0;
}
