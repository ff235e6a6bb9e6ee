// The OpenAI request parser: a body for /v1/chat/completions (first byte even) or
// /v1/completions (odd), through the steps the server takes before the engine sees it:
// JSON with the depth limit, the unimplemented-field check, the ignored-field list, the
// parse and validation, for chat the prompt rendered with the Qwen3.5 chat template, and the
// structured-output grammar (schema, regex, choice, GBNF, forced tool call) compiled.
#include "chat/chat_format.h"
#include "fuzz_util.h"
#include "jinja/chat_template.h"
#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "grammar/token_vocab.h"
#include "server/structured_output.h"
#include "tokenizer/tokenizer.h"
#include "server/openai_request.h"
#include "server/unimplemented_fields.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace {
const qinfer::ChatTemplate& qwen_template() {
  static const qinfer::ChatTemplate t = qinfer::ChatTemplate::load(QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5");
  return t;
}
// The server's compiler: the Qwen3.5 vocabulary, a cache of compiled grammars.
qinfer::grammar::Compiler* compiler() {
  static qinfer::grammar::Compiler c(qinfer::grammar::TokenVocab::from_tokenizer(
      qinfer::Tokenizer::load(QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5")));
  return &c;
}
}  // namespace

// The tokenizer, template and vocabulary index are loaded once before fuzzing starts, so the
// per-input timeout measures the request's own work, not this set-up (seconds under ASan).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)qwen_template();
  (void)compiler();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qinfer::server;
  if (size == 0) return 0;
  const bool chat = data[0] % 2 == 0;
  RequestLimits limits;
  limits.model_names = {"qwen", "alias"};
  limits.max_images_per_prompt = 2;
  try {
    const nlohmann::ordered_json body = qinfer::parse_ordered_json(qinfer::fuzz::as_text(data + 1, size - 1), "request body");
    reject_unimplemented_fields(body, chat);
    (void)ignored_fields(body, chat);
    if (chat) {
      const ChatRequest r = parse_chat_request(body, limits);
      (void)render_chat_prompt(r, qwen_template(), qinfer::chat::ChatFormat(), nlohmann::ordered_json::object());
      std::optional<qinfer::grammar::Spec> spec = r.structured;
      if (!spec && (r.tool_choice == ToolChoice::kRequired || r.tool_choice == ToolChoice::kNamed))
        spec = tool_call_spec(r.tools, r.tool_choice == ToolChoice::kNamed ? r.tool_choice_name : "");
      if (spec) (void)compile_structured(compiler(), *spec);
    } else {
      const CompletionRequest r = parse_completion_request(body, limits);
      if (r.structured) (void)compile_structured(compiler(), *r.structured);
    }
  } catch (const ApiError&) {
  } catch (const qinfer::Error&) {
  }
  return 0;
}
