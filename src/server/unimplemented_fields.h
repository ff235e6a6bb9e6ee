// Request fields that vLLM (or OpenAI) defines but this server does not act on. A request
// that sets one to something other than its neutral value gets a 400 naming the field,
// never a silently different answer. (Fields no API defines keep vLLM's behaviour: they are
// accepted and named in a warning, see ignored_fields.)
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace qinfer::server {

// Throws ApiError 400 (param = the field) for the first such field set in body.
void reject_unimplemented_fields(const nlohmann::ordered_json& body, bool chat);

}  // namespace qinfer::server
