// The HTTP server end to end in-process: real tokenizer and chat template, a scripted
// model, httplib client on a loopback port.
#include "server/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "jinja/chat_template.h"
#include "scripted_runner.h"
#include "tokenizer/tokenizer.h"

namespace qinfer::server {
namespace {

using json = nlohmann::json;
constexpr const char* kTokDir = QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5";  // shipped in the repository
constexpr int kVocab = 248320;
constexpr int kImEnd = 248046;

class ServerTest : public ::testing::Test {
 protected:
  // A setup that throws (a missing tokenizer file, a port in use) is reported by every test
  // of the suite instead of leaving null servers behind for them to crash on.
  static void SetUpTestSuite() {
    try {
      start();
    } catch (const std::exception& e) {
      setup_error_ = new std::string(e.what());
    }
  }
  void SetUp() override {
    if (setup_error_) GTEST_FAIL() << "ServerTest setup failed: " << *setup_error_;
  }
  static void start() {
    auto runner = std::make_unique<testing::ScriptedRunner>(kVocab, kImEnd, 2048);
    runner_ = runner.get();
    engine_ = testing::make_engine(std::move(runner), kTokDir, 4, &tok_).release();
    ServeOptions so;
    so.model_dir = kTokDir;
    so.host = "127.0.0.1";
    so.port = 0;
    so.api_key = "sk-test";
    so.served_model_names = {"qwen-test"};
    so.reasoning_parser = "qwen3";
    so.tool_call_parser = "qwen3_coder";
    so.enable_auto_tool_choice = true;
    so.max_images_per_prompt = 1;
    server_ = new HttpServer(*engine_, so);
    port_ = server_->bind();
    thread_ = new std::thread([] { server_->serve(); });
  }
  static void TearDownTestSuite() {
    if (server_) server_->stop();
    if (thread_) thread_->join();
    delete thread_;
    delete server_;
    delete engine_;
    delete setup_error_;
    thread_ = nullptr;
    server_ = nullptr;
    engine_ = nullptr;
    setup_error_ = nullptr;
  }
  void script(const std::string& text) { runner_->set_script(tok_->encode(text, true)); }
  httplib::Client client(bool auth = true) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(20, 0);
    if (auth) c.set_default_headers({{"Authorization", "Bearer sk-test"}});
    return c;
  }
  httplib::Result post(const std::string& path, const json& body, bool auth = true) {
    auto c = client(auth);
    return c.Post(path.c_str(), body.dump(), "application/json");
  }
  // SSE body -> the JSON events (and whether [DONE] ended it).
  static std::vector<json> events(const std::string& body, bool* done) {
    std::vector<json> out;
    *done = false;
    size_t pos = 0;
    while ((pos = body.find("data: ", pos)) != std::string::npos) {
      size_t end = body.find("\n\n", pos);
      std::string data = body.substr(pos + 6, end - pos - 6);
      if (data == "[DONE]") *done = true;
      else out.push_back(json::parse(data));
      pos = end;
    }
    return out;
  }

  static testing::ScriptedRunner* runner_;
  static Tokenizer* tok_;
  static engine::Engine* engine_;
  static HttpServer* server_;
  static std::thread* thread_;
  static int port_;
  static std::string* setup_error_;
};

testing::ScriptedRunner* ServerTest::runner_;
Tokenizer* ServerTest::tok_;
engine::Engine* ServerTest::engine_;
HttpServer* ServerTest::server_;
std::thread* ServerTest::thread_;
int ServerTest::port_;
std::string* ServerTest::setup_error_;

const json kTools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}])");
const char* kToolAnswer =
    "The user wants weather.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
    "</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>";

json chat_req(bool stream = false) {
  json b = {{"model", "qwen-test"}, {"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}};
  if (stream) b["stream"] = true;
  return b;
}

TEST_F(ServerTest, HealthModelsMetrics) {
  auto c = client(false);
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto m = client().Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  json j = json::parse(m->body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "qwen-test");
  EXPECT_EQ(j["data"][0]["max_model_len"], 2048);
  auto x = c.Get("/metrics");
  ASSERT_TRUE(x);
  EXPECT_NE(x->body.find("vllm:num_requests_running{model_name=\"qwen-test\",engine=\"0\"} "), std::string::npos);
  EXPECT_NE(x->body.find("vllm:time_to_first_token_seconds_bucket{model_name=\"qwen-test\",engine=\"0\",le=\"0.001\"}"),
            std::string::npos);
  auto nf = c.Get("/v1/nothing");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 401);  // /v1 needs the key first
  auto nf2 = client().Get("/v1/nothing");
  EXPECT_EQ(nf2->status, 404);
  EXPECT_TRUE(json::parse(nf2->body).contains("error"));
}

TEST_F(ServerTest, ApiKey) {
  auto r = post("/v1/chat/completions", chat_req(), false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "invalid_api_key");
}

TEST_F(ServerTest, ChatToolCallNonStreaming) {
  script(kToolAnswer);
  json b = chat_req();
  b["tools"] = kTools;
  auto r = post("/v1/chat/completions", b);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "qwen-test");
  const json& ch = j["choices"][0];
  EXPECT_EQ(ch["finish_reason"], "tool_calls");
  EXPECT_EQ(ch["message"]["role"], "assistant");
  EXPECT_EQ(ch["message"]["reasoning_content"], "The user wants weather.\n");
  EXPECT_EQ(ch["message"]["reasoning"], "The user wants weather.\n");  // current vLLM's name
  EXPECT_EQ(ch["message"]["content"], "\n\n");
  ASSERT_EQ(ch["message"]["tool_calls"].size(), 1u);
  const json& tc = ch["message"]["tool_calls"][0];
  EXPECT_EQ(tc["type"], "function");
  EXPECT_EQ(tc["function"]["name"], "get_weather");
  EXPECT_EQ(tc["function"]["arguments"], "{\"city\": \"Paris\", \"days\": 2}");
  int64_t n = static_cast<int64_t>(tok_->encode(kToolAnswer, true).size()) + 1;  // + <|im_end|>
  EXPECT_EQ(j["usage"]["completion_tokens"], n);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int64_t>() + n);
  EXPECT_GT(j["usage"]["completion_tokens_details"]["reasoning_tokens"], 0);
}

TEST_F(ServerTest, ChatToolCallStreaming) {
  script(kToolAnswer);
  json b = chat_req(true);
  b["tools"] = kTools;
  b["stream_options"] = {{"include_usage", true}};
  auto r = post("/v1/chat/completions", b);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  bool done = false;
  auto ev = events(r->body, &done);
  EXPECT_TRUE(done);
  ASSERT_GE(ev.size(), 4u);
  EXPECT_EQ(ev[0]["choices"][0]["delta"]["role"], "assistant");
  std::string reasoning, content, args, name;
  std::string finish;
  for (const auto& e : ev) {
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    if (e["choices"].empty()) continue;
    const json& d = e["choices"][0]["delta"];
    if (d.contains("reasoning_content")) {
      reasoning += d["reasoning_content"].get<std::string>();
      EXPECT_EQ(d["reasoning"], d["reasoning_content"]);
    }
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (d.contains("tool_calls")) {
      for (const auto& t : d["tool_calls"]) {
        EXPECT_EQ(t["index"], 0);
        if (t["function"].contains("name")) name = t["function"]["name"];
        if (t["function"].contains("arguments")) args += t["function"]["arguments"].get<std::string>();
      }
    }
    if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(reasoning, "The user wants weather.\n");
  EXPECT_EQ(content, "\n\n");
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(args, "{\"city\": \"Paris\", \"days\": 2}");
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_TRUE(ev.back()["choices"].empty());
  EXPECT_GT(ev.back()["usage"]["completion_tokens"], 0);
}

TEST_F(ServerTest, ThinkingOffAllContentAndStopString) {
  script("Hello there. General Kenobi!");
  json b = chat_req();
  b["chat_template_kwargs"] = {{"enable_thinking", false}};
  auto r = post("/v1/chat/completions", b);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello there. General Kenobi!");
  EXPECT_FALSE(j["choices"][0]["message"].contains("reasoning_content") &&
               !j["choices"][0]["message"]["reasoning_content"].is_null());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  b["stop"] = " General";
  j = json::parse(post("/v1/chat/completions", b)->body);
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello there.");
  EXPECT_EQ(j["choices"][0]["stop_reason"], " General");
  b.erase("stop");
  b["max_tokens"] = 2;
  b["n"] = 2;
  b["logprobs"] = true;
  b["top_logprobs"] = 2;
  j = json::parse(post("/v1/chat/completions", b)->body);
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"].size(), 2u);
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size(), 2u);
}

TEST_F(ServerTest, Completions) {
  script(" world");
  auto r = post("/v1/completions", {{"model", "qwen-test"}, {"prompt", "Hello"}, {"max_tokens", 5}, {"echo", true}});
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "Hello world");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  auto ids = tok_->encode("Hello", true);
  r = post("/v1/completions", {{"prompt", ids}, {"max_tokens", 5}, {"stream", true}});
  bool done = false;
  auto ev = events(r->body, &done);
  EXPECT_TRUE(done);
  std::string text;
  for (const auto& e : ev) text += e["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, " world");
}

TEST_F(ServerTest, Errors) {
  auto check = [&](const std::string& path, const json& body, int status, const std::string& param) {
    auto r = post(path, body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << body.dump() << " -> " << r->body;
    json j = json::parse(r->body);
    ASSERT_TRUE(j.contains("error")) << r->body;
    EXPECT_TRUE(j["error"]["message"].is_string());
    if (!param.empty()) {
      EXPECT_EQ(j["error"]["param"], param) << r->body;
    }
  };
  json b = chat_req();
  b["model"] = "other";
  check("/v1/chat/completions", b, 404, "model");
  b = chat_req();
  b["temperature"] = "hot";
  check("/v1/chat/completions", b, 400, "temperature");
  b = chat_req();
  b["max_tokens"] = 5000;
  check("/v1/chat/completions", b, 400, "");
  check("/v1/completions", {{"prompt", std::vector<int>(3000, 5)}}, 400, "");
  json img = {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,AAAA"}}}};
  b = chat_req();
  b["messages"][0]["content"] = json::array({img, img});
  check("/v1/chat/completions", b, 400, "messages");
  auto c = client();
  auto r = c.Post("/v1/chat/completions", "{not json", "application/json");
  EXPECT_EQ(r->status, 400);
}

TEST_F(ServerTest, ClientDisconnectFreesSequence) {
  script("la la la la ");
  json b = {{"prompt", "sing"}, {"max_tokens", 1000}, {"ignore_eos", true}, {"stream", true}};
  int64_t aborted = engine_->stats().requests_aborted;
  auto c = client();
  int chunks = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = {{"Authorization", "Bearer sk-test"}, {"Content-Type", "application/json"}};
  req.body = b.dump();
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };
  c.send(req);
  EXPECT_GE(chunks, 3);
  bool freed = false;
  for (int i = 0; i < 100 && !freed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    freed = engine_->stats().requests_aborted > aborted && runner_->live.load() == 0;
  }
  EXPECT_TRUE(freed) << "the disconnected request kept running";
}

TEST_F(ServerTest, RequiredAndNamedToolChoiceForceACall) {
  // The server writes "<tool_call>\n<function=" (and the name) into the prompt; the
  // model continues from there.
  script("get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\n</tool_call>");
  json b = chat_req();
  b["tools"] = kTools;
  b["tool_choice"] = "required";
  json j = json::parse(post("/v1/chat/completions", b)->body);
  const json& m = j["choices"][0]["message"];
  ASSERT_EQ(m["tool_calls"].size(), 1u) << j.dump();
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Rome\"}");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_TRUE(m["reasoning_content"].is_null());
  // The forced call closed thinking before the model ran: nothing generated is reasoning.
  EXPECT_EQ(j["usage"]["completion_tokens_details"]["reasoning_tokens"], 0) << j.dump();
  script("<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>");
  b["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  b["stream"] = true;
  bool done = false;
  auto ev = events(post("/v1/chat/completions", b)->body, &done);
  std::string name, args, finish;
  for (const auto& e : ev) {
    for (const auto& t : e["choices"][0]["delta"].value("tool_calls", json::array())) {
      if (t["function"].contains("name")) name = t["function"]["name"];
      if (t["function"].contains("arguments")) args += t["function"]["arguments"].get<std::string>();
    }
    if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(args, "{\"city\": \"Oslo\"}");
  EXPECT_EQ(finish, "stop");  // a named tool choice keeps "stop", as vLLM
}

TEST_F(ServerTest, NonStreamingClientGoneIsNoticed) {
  script("la la la la ");
  runner_->delay_ms = 5;
  int64_t aborted = engine_->stats().requests_aborted;
  {
    httplib::Client c("127.0.0.1", port_);
    c.set_default_headers({{"Authorization", "Bearer sk-test"}});
    c.set_read_timeout(0, 200000);  // gives up long before the answer is complete
    auto r = c.Post("/v1/completions", json{{"prompt", "sing"}, {"ignore_eos", true}, {"max_tokens", 1500}}.dump(),
                    "application/json");
    EXPECT_FALSE(r && r->status == 200 && r->body.find("choices") != std::string::npos);
  }
  bool freed = false;
  for (int i = 0; i < 250 && !freed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    freed = engine_->stats().requests_aborted > aborted && runner_->live.load() == 0;
  }
  runner_->delay_ms = 0;
  EXPECT_TRUE(freed) << "the abandoned non-streaming request kept running";
}

}  // namespace
}  // namespace qinfer::server
