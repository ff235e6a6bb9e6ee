#include "server/openai_request.h"

#include <gtest/gtest.h>

#include "server/api_error.h"

namespace qinfer::server {
namespace {

using json = nlohmann::ordered_json;

RequestLimits limits() {
  RequestLimits l;
  l.model_names = {"qwen", "alias"};
  l.max_images_per_prompt = 2;
  return l;
}

json chat_body() {
  return json::parse(R"({"model": "qwen", "messages": [{"role": "user", "content": "hi"}]})");
}

// Expects ApiError with this status whose param is `param`.
void expect_error(const json& body, int status, const std::string& param, bool chat = true) {
  try {
    if (chat) parse_chat_request(body, limits());
    else parse_completion_request(body, limits());
    ADD_FAILURE() << "no error for " << body.dump();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_EQ(e.param(), param) << e.what();
    EXPECT_NE(std::string(e.what()).find(param), std::string::npos) << e.what();
  }
}

TEST(ChatRequest, Defaults) {
  auto r = parse_chat_request(chat_body(), limits());
  EXPECT_EQ(r.model, "qwen");
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.gen.temperature, 1.0);
  EXPECT_EQ(r.gen.top_p, 1.0);
  EXPECT_EQ(r.gen.top_k, -1);
  EXPECT_EQ(r.gen.max_tokens, -1);
  EXPECT_EQ(r.gen.logprobs, -1);
  EXPECT_TRUE(r.enable_thinking);
  EXPECT_EQ(r.tool_choice, ToolChoice::kNone);
}

TEST(ChatRequest, GenerationConfigDefaultsApplyOnlyWhenOmitted) {
  RequestLimits l = limits();
  l.defaults = SamplingDefaults::from_generation_config(
      json::parse(R"({"temperature": 0.6, "top_k": 20, "top_p": 0.95, "eos_token_id": [1, 2]})"));
  auto r = parse_chat_request(chat_body(), l);
  EXPECT_DOUBLE_EQ(r.gen.temperature, 0.6);
  EXPECT_EQ(r.gen.top_k, 20);
  EXPECT_DOUBLE_EQ(r.gen.top_p, 0.95);
  json b = chat_body();
  b["temperature"] = 0;
  b["top_k"] = -1;
  auto r2 = parse_chat_request(b, l);
  EXPECT_EQ(r2.gen.temperature, 0);
  EXPECT_EQ(r2.gen.top_k, -1);
}

TEST(ChatRequest, SamplingFields) {
  json b = chat_body();
  b.update(json::parse(R"({"temperature": 0.5, "top_p": 0.9, "top_k": 5, "min_p": 0.1,
      "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.1, "seed": 42,
      "stop": ["a", "bc"], "max_completion_tokens": 7, "max_tokens": 99, "n": 3,
      "logprobs": true, "top_logprobs": 4, "stop_token_ids": [5], "logit_bias": {"12": 200}})"));
  auto r = parse_chat_request(b, limits());
  EXPECT_EQ(r.gen.temperature, 0.5);
  EXPECT_EQ(r.gen.top_k, 5);
  EXPECT_EQ(r.gen.min_p, 0.1);
  EXPECT_EQ(r.gen.frequency_penalty, -0.5);
  EXPECT_EQ(r.gen.repetition_penalty, 1.1);
  EXPECT_EQ(*r.gen.seed, 42u);
  EXPECT_EQ(r.gen.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(r.gen.max_tokens, 7);  // max_completion_tokens wins
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.gen.logprobs, 4);
  EXPECT_EQ(r.gen.stop_token_ids, std::vector<int>{5});
  EXPECT_EQ(r.gen.logit_bias.at(12), 100.f);  // clamped
  b.erase("max_completion_tokens");
  EXPECT_EQ(parse_chat_request(b, limits()).gen.max_tokens, 99);
  json s = chat_body();
  s["stop"] = "END";
  EXPECT_EQ(parse_chat_request(s, limits()).gen.stop, std::vector<std::string>{"END"});
}

TEST(ChatRequest, BadFieldsNameTheField) {
  auto with = [](const char* k, json v) {
    json b = chat_body();
    b[k] = v;
    return b;
  };
  expect_error(with("temperature", "hot"), 400, "temperature");
  expect_error(with("temperature", -1), 400, "temperature");
  expect_error(with("top_p", 0), 400, "top_p");
  expect_error(with("top_p", 1.5), 400, "top_p");
  expect_error(with("top_k", -2), 400, "top_k");
  expect_error(with("top_k", 1.5), 400, "top_k");
  expect_error(with("min_p", 2), 400, "min_p");
  expect_error(with("presence_penalty", 3), 400, "presence_penalty");
  expect_error(with("repetition_penalty", 0), 400, "repetition_penalty");
  expect_error(with("max_tokens", 0), 400, "max_tokens");
  expect_error(with("max_completion_tokens", "5"), 400, "max_completion_tokens");
  expect_error(with("n", 0), 400, "n");
  expect_error(with("stream", "yes"), 400, "stream");
  expect_error(with("stop", json::array({1})), 400, "stop[0]");
  expect_error(with("seed", "x"), 400, "seed");
  expect_error(with("top_logprobs", 3), 400, "top_logprobs");  // needs logprobs
  expect_error(with("stream_options", json{{"include_usage", true}}), 400, "stream_options");
  expect_error(with("messages", "hi"), 400, "messages");
  expect_error(with("messages", json::array()), 400, "messages");
  expect_error(with("tools", json::array()), 400, "tools");
  expect_error(with("tool_choice", "sometimes"), 400, "tool_choice");
  expect_error(with("tool_choice", "required"), 400, "tool_choice");  // no tools
  expect_error(with("response_format", json{{"type", "yaml"}}), 400, "response_format.type");
  expect_error(with("chat_template_kwargs", json{{"enable_thinking", "no"}}), 400,
               "chat_template_kwargs.enable_thinking");
  json lp = with("logprobs", true);
  lp["top_logprobs"] = 21;
  expect_error(lp, 400, "top_logprobs");
}

// Range errors print numbers as written, not as std::to_string's "0.000000".
TEST(ChatRequest, RangeErrorsPrintPlainNumbers) {
  json b = chat_body();
  b["temperature"] = -1;
  try {
    parse_chat_request(b, limits());
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(std::string(e.what()), "temperature: must be in [0, 100], got -1");
  }
}

// Unknown fields are accepted (as vLLM does) and listed for the warning.
TEST(ChatRequest, IgnoredFieldsAreListed) {
  json b = chat_body();
  b["foo_bar"] = 1;
  b["temperature"] = 0.5;
  b["guided_json"] = json::object();  // structured outputs are read, not ignored
  b["zz_unknown"] = true;
  EXPECT_NO_THROW(parse_chat_request(b, limits()));
  EXPECT_EQ(ignored_fields(b, true), (std::vector<std::string>{"foo_bar", "zz_unknown"}));
  EXPECT_TRUE(ignored_fields(chat_body(), true).empty());
  json c = json::parse(R"({"model": "qwen", "prompt": "x", "echo": true, "messages": []})");
  EXPECT_EQ(ignored_fields(c, false), std::vector<std::string>{"messages"});
}

TEST(ChatRequest, UnknownModelIs404) {
  json b = chat_body();
  b["model"] = "gpt-4";
  expect_error(b, 404, "model");
  b["model"] = "alias";
  EXPECT_EQ(parse_chat_request(b, limits()).model, "alias");
  b.erase("model");
  EXPECT_EQ(parse_chat_request(b, limits()).model, "qwen");
}

TEST(ChatRequest, MessagesAreNormalised) {
  json b = json::parse(R"({"messages": [
    {"role": "developer", "content": "be brief"},
    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    {"role": "assistant", "content": null, "reasoning": "think",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "42"}]})");
  auto r = parse_chat_request(b, limits());
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[2]["reasoning_content"], "think");
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["arguments"], json({{"a", 1}}));
  b["messages"][2]["tool_calls"][0]["function"]["arguments"] = "{not json";
  expect_error(b, 400, "messages[2].tool_calls[0].function.arguments");
  json bad_role = chat_body();
  bad_role["messages"][0]["role"] = "robot";
  expect_error(bad_role, 400, "messages[0].role");
  json no_content = chat_body();
  no_content["messages"][0].erase("content");
  expect_error(no_content, 400, "messages[0].content");
}

TEST(ChatRequest, ImageLimit) {
  json img = {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,AAAA"}}}};
  json b = chat_body();
  b["messages"][0]["content"] = json::array({img, img, {{"type", "text"}, {"text", "x"}}});
  EXPECT_EQ(parse_chat_request(b, limits()).image_count, 2);
  b["messages"][0]["content"].push_back(img);
  expect_error(b, 400, "messages");
}

TEST(ChatRequest, ToolsAndToolChoice) {
  json b = chat_body();
  b["tools"] = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
  auto r = parse_chat_request(b, limits());
  EXPECT_EQ(r.tool_choice, ToolChoice::kAuto);
  b["tool_choice"] = "none";
  EXPECT_EQ(parse_chat_request(b, limits()).tool_choice, ToolChoice::kNone);
  b["tool_choice"] = "required";
  EXPECT_EQ(parse_chat_request(b, limits()).tool_choice, ToolChoice::kRequired);
  b["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  auto named = parse_chat_request(b, limits());
  EXPECT_EQ(named.tool_choice, ToolChoice::kNamed);
  EXPECT_EQ(named.tool_choice_name, "get_weather");
  b["tool_choice"]["function"]["name"] = "nope";
  expect_error(b, 400, "tool_choice");
  json t = chat_body();
  t["tools"] = json::parse(R"([{"type": "function", "function": {"name": ""}}])");
  expect_error(t, 400, "tools[0].function.name");
}

TEST(ChatRequest, ThinkingSwitches) {
  json b = chat_body();
  b["chat_template_kwargs"] = {{"enable_thinking", false}};
  EXPECT_FALSE(parse_chat_request(b, limits()).enable_thinking);
  json e = chat_body();
  e["reasoning_effort"] = "none";
  auto r = parse_chat_request(e, limits());
  EXPECT_FALSE(r.enable_thinking);
  EXPECT_EQ(r.chat_template_kwargs["enable_thinking"], false);
  json s = chat_body();
  s["stream"] = true;
  s["stream_options"] = {{"include_usage", true}};
  auto rs = parse_chat_request(s, limits());
  EXPECT_TRUE(rs.stream);
  EXPECT_TRUE(rs.include_usage);
}

TEST(CompletionRequest, PromptForms) {
  auto r = parse_completion_request(json::parse(R"({"model": "qwen", "prompt": "hello"})"), limits());
  EXPECT_EQ(r.prompt_texts, std::vector<std::string>{"hello"});
  EXPECT_EQ(r.gen.max_tokens, 16);  // OpenAI default for completions
  r = parse_completion_request(json::parse(R"({"prompt": [1, 2, 3], "max_tokens": 4})"), limits());
  EXPECT_EQ(r.prompt_ids, (std::vector<std::vector<int>>{{1, 2, 3}}));
  EXPECT_EQ(r.gen.max_tokens, 4);
  r = parse_completion_request(json::parse(R"({"prompt": [[1], [2, 3]]})"), limits());
  EXPECT_EQ(r.num_prompts(), 2u);
  r = parse_completion_request(json::parse(R"({"prompt": ["a", "b"], "logprobs": 2, "echo": true})"), limits());
  EXPECT_EQ(r.num_prompts(), 2u);
  EXPECT_EQ(r.gen.logprobs, 2);
  EXPECT_TRUE(r.echo);
  expect_error(json::parse(R"({"prompt": [1, "a"]})"), 400, "prompt[1]", false);
  expect_error(json::parse(R"({"prompt": []})"), 400, "prompt", false);
  expect_error(json::parse(R"({"prompt": 5})"), 400, "prompt", false);
  expect_error(json::parse(R"({})"), 400, "prompt", false);
  expect_error(json::parse(R"({"prompt": "x", "model": "m"})"), 404, "model", false);
  expect_error(json::parse(R"({"prompt": "x", "logprobs": 30})"), 400, "logprobs", false);
}

TEST(ApiError, JsonShape) {
  ApiError e(404, "The model `x` does not exist.", "model", "model_not_found");
  json j = e.to_json();
  EXPECT_EQ(j["error"]["message"], "The model `x` does not exist.");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  json k = ApiError(401, "bad key").to_json();
  EXPECT_EQ(k["error"]["type"], "authentication_error");
  EXPECT_TRUE(k["error"]["param"].is_null());
}

TEST(ChatRequest, ImagePartShapes) {
  json b = chat_body();
  b["messages"][0]["content"] = json::array({
      {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,AAAA"}, {"detail", "auto"}}}},
      {{"type", "input_image"}, {"image_url", "http://127.0.0.1:1/a.png"}},
      {{"type", "text"}, {"text", "what is this?"}}});
  ChatRequest r = parse_chat_request(b, limits());
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[0].field, "messages[0].content[0].image_url");
  EXPECT_EQ(r.images[0].url, "data:image/png;base64,AAAA");
  EXPECT_EQ(r.images[1].field, "messages[0].content[1].image_url");
  EXPECT_EQ(r.images[1].url, "http://127.0.0.1:1/a.png");
  // The template sees image parts without their (possibly huge) URLs.
  EXPECT_EQ(r.messages[0]["content"][0].dump(), R"({"type":"image"})");
  EXPECT_EQ(r.messages[0]["content"][1].dump(), R"({"type":"image"})");
  EXPECT_EQ(r.messages[0]["content"][2]["text"], "what is this?");
  // vLLM's shorthand: image_url as a bare string on an image_url part.
  b["messages"][0]["content"] = json::array({{{"type", "image_url"}, {"image_url", "data:image/png;base64,AA=="}}});
  EXPECT_EQ(parse_chat_request(b, limits()).images.at(0).url, "data:image/png;base64,AA==");
}

TEST(ChatRequest, BadImageAndVideoParts) {
  json b = chat_body();
  b["messages"][0]["content"] = json::array({{{"type", "text"}, {"text", "x"}}, {{"type", "image_url"}}});
  expect_error(b, 400, "messages[0].content[1].image_url");
  b["messages"][0]["content"][1]["image_url"] = json::object();
  expect_error(b, 400, "messages[0].content[1].image_url.url");
  b["messages"][0]["content"][1]["image_url"] = 7;
  expect_error(b, 400, "messages[0].content[1].image_url");
  b["messages"][0]["content"][1] = {{"type", "video_url"}, {"video_url", {{"url", "http://x/v.mp4"}}}};
  try {
    parse_chat_request(b, limits());
    FAIL() << "a video part was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "messages[0].content[1].type");
    EXPECT_NE(std::string(e.what()).find("video processor"), std::string::npos) << e.what();
  }
  b = chat_body();
  b["mm_processor_kwargs"] = "max_pixels=1";
  expect_error(b, 400, "mm_processor_kwargs");
  b["mm_processor_kwargs"] = {{"max_pixels", 200000}};
  EXPECT_EQ(parse_chat_request(b, limits()).mm_processor_kwargs["max_pixels"], 200000);
}

}  // namespace
}  // namespace qinfer::server
