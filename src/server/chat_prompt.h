// The prompt text of a chat request: the chat template applied to its messages and tools
// with --default-chat-template-kwargs under the request's chat_template_kwargs, and the
// chat format's end-of-turn cut when continue_final_message is set. Shared by
// /v1/chat/completions and /tokenize. A template error is ApiError 400 naming "messages".
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace qinfer {
class ChatTemplate;
}
namespace qinfer::chat {
struct ChatFormat;
}

namespace qinfer::server {

std::string render_chat_prompt(const ChatRequest& r, const ChatTemplate& tmpl, const chat::ChatFormat& format,
                               const nlohmann::ordered_json& default_kwargs);

}  // namespace qinfer::server
