#include "server/chat_prompt.h"

#include "chat/chat_format.h"
#include "jinja/chat_template.h"
#include "server/api_error.h"
#include "util/error.h"

namespace qinfer::server {

std::string render_chat_prompt(const ChatRequest& r, const ChatTemplate& tmpl, const chat::ChatFormat& format,
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
  // Continue the last assistant message: drop the end-of-turn the template closed it with.
  if (r.continue_final_message) prompt = format.without_turn_end(std::move(prompt));
  return prompt;
}

}  // namespace qinfer::server
