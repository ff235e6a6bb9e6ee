#include "server/chat_prompt.h"

#include "jinja/chat_template.h"
#include "server/api_error.h"
#include "util/error.h"

namespace qinfer::server {

std::string render_chat_prompt(const ChatRequest& r, const ChatTemplate& tmpl,
                               const nlohmann::ordered_json& default_kwargs) {
  nlohmann::ordered_json kwargs = default_kwargs.is_object() ? default_kwargs : nlohmann::ordered_json::object();
  for (auto it = r.chat_template_kwargs.begin(); it != r.chat_template_kwargs.end(); ++it) kwargs[it.key()] = it.value();
  if (!r.chat_template_kwargs.contains("enable_thinking") && !r.enable_thinking) kwargs["enable_thinking"] = false;
  std::string prompt;
  try {
    prompt = tmpl.apply(r.messages, r.tools.is_array() ? r.tools : nlohmann::ordered_json(nullptr),
                        r.add_generation_prompt, kwargs);
  } catch (const Error& e) {
    throw ApiError(400, cat("chat template: ", e.what()), "messages");
  }
  if (r.continue_final_message) {
    // Continue the last assistant message: drop the end-of-turn the template closed it with.
    for (const char* tail : {"<|im_end|>\n", "<|im_end|>"}) {
      std::string t = tail;
      if (prompt.size() >= t.size() && prompt.compare(prompt.size() - t.size(), t.size(), t) == 0) {
        prompt.resize(prompt.size() - t.size());
        break;
      }
    }
  }
  return prompt;
}

}  // namespace qinfer::server
