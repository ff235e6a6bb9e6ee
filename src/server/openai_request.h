// OpenAI / vLLM request bodies parsed and validated into plain structs. Every bad
// field throws ApiError 400 naming it ("temperature: must be a number"); an unknown
// model is 404; an image count over --limit-mm-per-prompt is 400. Bodies are
// nlohmann::ordered_json so messages and tools keep their key order for the template.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gen_params.h"
#include "grammar/compiler.h"
#include "server/image_input.h"

namespace qinfer::server {

// Sampling defaults for fields a request leaves out (vLLM takes them from the
// model's generation_config.json), then the OpenAI defaults.
struct SamplingDefaults {
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int> top_k;
  std::optional<int64_t> max_tokens;
  static SamplingDefaults from_generation_config(const nlohmann::ordered_json& gc);
};

// Most choices per prompt (vLLM also caps n), and most sequences one request may queue
// (prompts x n): a 385-byte completions request used to queue 2,560 sequences.
inline constexpr int kMaxN = 64;
inline constexpr int kMaxSequencesPerRequest = 256;

// chat_template_kwargs keys that would override what the request validated (messages, tools,
// the image count, add_generation_prompt): refused with a 400, as transformers refuses them.
inline constexpr const char* kReservedTemplateKwargs[] = {
    "messages", "conversation", "tools", "documents", "add_generation_prompt", "continue_final_message",
    "chat_template", "tokenize"};

struct RequestLimits {
  std::vector<std::string> model_names;  // accepted "model" values (the first is reported)
  int max_images_per_prompt = 1;
  SamplingDefaults defaults;
};

enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

struct ChatRequest {
  std::string model;
  nlohmann::ordered_json messages;       // normalised for the chat template
  nlohmann::ordered_json tools;          // null or a non-empty array
  ToolChoice tool_choice = ToolChoice::kNone;
  std::string tool_choice_name;          // kNamed
  bool parallel_tool_calls = true;
  bool stream = false, include_usage = false, continuous_usage = false;
  int n = 1;
  engine::GenParams gen;
  bool logprobs = false;
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  bool enable_thinking = true;
  bool include_reasoning = true;
  bool add_generation_prompt = true, continue_final_message = false;
  int image_count = 0;
  std::vector<ImageRef> images;            // the image parts' URLs, in prompt order
  nlohmann::ordered_json mm_processor_kwargs;  // null or an object (min_pixels / max_pixels)
  std::optional<grammar::Spec> structured;  // response_format / structured_outputs / guided_*
};

struct CompletionRequest {
  std::string model;
  std::vector<std::string> prompt_texts;    // prompt given as text (one per prompt)
  std::vector<std::vector<int>> prompt_ids; // prompt given as token ids
  bool stream = false, include_usage = false, continuous_usage = false;
  bool echo = false;
  bool echo_logprobs = false;               // echo with logprobs: the prompt's tokens lead the logprobs
  int n = 1;
  engine::GenParams gen;
  std::optional<grammar::Spec> structured;  // structured_outputs / guided_* / response_format
  size_t num_prompts() const { return prompt_texts.size() + prompt_ids.size(); }
};

ChatRequest parse_chat_request(const nlohmann::ordered_json& body, const RequestLimits& limits);
CompletionRequest parse_completion_request(const nlohmann::ordered_json& body, const RequestLimits& limits);

// The top-level fields of a request body that this server does not act on, in body
// order. Like vLLM, such fields are accepted and reported in a warning, not refused.
std::vector<std::string> ignored_fields(const nlohmann::ordered_json& body, bool chat);

}  // namespace qinfer::server
