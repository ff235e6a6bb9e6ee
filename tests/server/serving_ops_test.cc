// The operational surface of the server in-process (real tokenizer and chat template,
// scripted model, httplib client on loopback): /version, /tokenize, /detokenize, /ping,
// /health while loading and draining, vLLM metric names, X-Request-Id, CORS, the bounded
// queue, the request timeout, prompt logprobs and echo, unimplemented fields, the chat page.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "jinja/chat_template.h"
#include "scripted_runner.h"
#include "server/cors.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/request_log.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qinfer::server {
namespace {

using json = nlohmann::json;
constexpr const char* kTokDir = QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5";  // shipped in the repository
constexpr int kVocab = 248320;
constexpr int kImEnd = 248046;

// One engine + server on a free loopback port, made from the options given.
struct Live {
  testing::ScriptedRunner* runner = nullptr;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<HttpServer> server;
  std::thread thread;
  int port = 0;
  Tokenizer* tok = nullptr;

  explicit Live(ServeOptions so, bool attach = true, int max_num_seqs = 4) {
    auto r = std::make_unique<testing::ScriptedRunner>(kVocab, kImEnd, 2048);
    runner = r.get();
    auto t = std::make_unique<Tokenizer>(Tokenizer::load(kTokDir));
    tok = t.get();
    auto tmpl = std::make_unique<ChatTemplate>(ChatTemplate::load(kTokDir));
    engine::EngineOptions eo;
    eo.max_num_seqs = max_num_seqs;
    engine = std::make_unique<engine::Engine>(std::move(r), std::move(t), std::move(tmpl), eo);
    so.model_dir = kTokDir;
    so.host = "127.0.0.1";
    so.port = 0;
    so.max_num_seqs = max_num_seqs;
    if (so.served_model_names.empty()) so.served_model_names = {"m"};
    server = std::make_unique<HttpServer>(so);
    if (attach) server->attach(*engine);
    port = server->bind();
    thread = std::thread([this] { server->serve(); });
  }
  ~Live() {
    server->stop();
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(20, 0);
    return c;
  }
  httplib::Result post(const std::string& path, const json& body, const httplib::Headers& h = {}) const {
    auto c = client();
    return c.Post(path.c_str(), h, body.dump(), "application/json");
  }
  void script(const std::string& text) { runner->set_script(tok->encode(text, true)); }
};

json chat(const std::string& text) { return {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", text}}}}}; }

TEST(ServingOps, VersionPingTokenizeDetokenize) {
  Live s{ServeOptions{}};
  auto c = s.client();
  auto v = c.Get("/version");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, 200);
  EXPECT_TRUE(json::parse(v->body)["version"].is_string());
  EXPECT_EQ(c.Get("/ping")->status, 200);
  EXPECT_EQ(c.Post("/ping", "", "application/json")->status, 200);

  auto t = s.post("/tokenize", {{"model", "m"}, {"prompt", "Hello world"}, {"return_token_strs", true}});
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200) << t->body;
  json j = json::parse(t->body);
  std::vector<int> want = s.tok->encode("Hello world", true);
  EXPECT_EQ(j["tokens"].get<std::vector<int>>(), want);
  EXPECT_EQ(j["count"], want.size());
  EXPECT_EQ(j["max_model_len"], 2048);
  ASSERT_EQ(j["token_strs"].size(), want.size());
  EXPECT_EQ(j["token_strs"][0], "Hello");

  // messages: the chat template's prompt, as the chat endpoint would build it.
  json m = chat("Hi");
  m["chat_template_kwargs"] = {{"enable_thinking", false}};
  auto tm = s.post("/tokenize", m);
  ASSERT_EQ(tm->status, 200) << tm->body;
  std::string prompt = s.engine->chat_template()->apply(json::parse(R"([{"role":"user","content":"Hi"}])"), nullptr,
                                                        true, json{{"enable_thinking", false}});
  EXPECT_EQ(json::parse(tm->body)["tokens"].get<std::vector<int>>(), s.tok->encode(prompt, true));
  EXPECT_TRUE(json::parse(tm->body)["token_strs"].is_null());

  auto d = s.post("/detokenize", {{"model", "m"}, {"tokens", want}});
  ASSERT_EQ(d->status, 200) << d->body;
  EXPECT_EQ(json::parse(d->body)["prompt"], "Hello world");
  auto bad = s.post("/detokenize", {{"tokens", {1, -5}}});
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "tokens[1]");
  auto both = s.post("/tokenize", {{"prompt", "x"}, {"messages", json::array()}});
  EXPECT_EQ(both->status, 400);
  auto unknown = s.post("/tokenize", {{"model", "other"}, {"prompt", "x"}});
  EXPECT_EQ(unknown->status, 404);
}

TEST(ServingOps, HealthIs503WhileLoadingAndDraining) {
  Live s{ServeOptions{}, /*attach=*/false};
  auto c = s.client();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 503);
  EXPECT_EQ(json::parse(h->body)["error"]["code"], "loading");
  auto g = s.post("/v1/chat/completions", chat("hi"));
  EXPECT_EQ(g->status, 503);
  EXPECT_EQ(c.Get("/version")->status, 200);  // no model needed
  s.server->attach(*s.engine);
  EXPECT_EQ(c.Get("/health")->status, 200);

  // Drain while a request runs: it finishes, new ones and /health get 503, drain returns.
  s.script("one two three four five six seven eight");
  s.runner->delay_ms = 30;
  std::thread running([&] {
    auto r = s.post("/v1/chat/completions", chat("long"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(json::parse(r->body)["choices"][0]["finish_reason"], "stop");
  });
  for (int i = 0; i < 200 && s.server->requests_in_flight() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_GT(s.server->requests_in_flight(), 0);
  std::thread drainer([&] { s.server->drain(20); });
  // Wait for the drain to begin (a fixed sleep lost this race on a loaded 2-core host).
  for (int i = 0; i < 2000 && !s.server->draining(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(s.server->draining());
  auto h2 = s.client().Get("/health");
  if (h2) {  // the server may already have finished draining and stopped
    EXPECT_EQ(h2->status, 503);
    auto refused = s.post("/v1/chat/completions", chat("late"));
    if (refused) {
      EXPECT_EQ(refused->status, 503);
    }
  }
  running.join();
  drainer.join();
  EXPECT_EQ(s.server->requests_in_flight(), 0);
}

TEST(ServingOps, MetricsUseVllmNamesLabelsAndBuckets) {
  ServeOptions so;
  so.served_model_names = {"qwen-x"};
  Live s{so};
  s.script("a b c");
  auto r = s.post("/v1/chat/completions", json{{"model", "qwen-x"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}});
  ASSERT_EQ(r->status, 200) << r->body;
  std::string m = s.client().Get("/metrics")->body;
  const std::string l = "{model_name=\"qwen-x\",engine=\"0\"}";
  for (const char* name : {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                           "vllm:prompt_tokens_total", "vllm:generation_tokens_total"}) {
    EXPECT_NE(m.find(std::string(name) + l + " "), std::string::npos) << name;
  }
  EXPECT_NE(m.find("vllm:request_success_total{model_name=\"qwen-x\",engine=\"0\",finished_reason=\"stop\"} 1.0"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("# TYPE vllm:time_to_first_token_seconds histogram"), std::string::npos);
  EXPECT_NE(m.find("vllm:time_to_first_token_seconds_bucket{model_name=\"qwen-x\",engine=\"0\",le=\"2560.0\"} 1.0"),
            std::string::npos);
  EXPECT_NE(m.find("vllm:inter_token_latency_seconds_bucket{model_name=\"qwen-x\",engine=\"0\",le=\"0.075\"}"),
            std::string::npos);
  EXPECT_NE(m.find("vllm:e2e_request_latency_seconds_bucket{model_name=\"qwen-x\",engine=\"0\",le=\"7680.0\"} 1.0"),
            std::string::npos);
  EXPECT_NE(m.find("vllm:e2e_request_latency_seconds_count" + l + " 1.0"), std::string::npos);
  // Token histograms: 1-2-5 buckets up to max_model_len (2048): ... 1000, 2000.
  EXPECT_NE(m.find("vllm:request_prompt_tokens_bucket{model_name=\"qwen-x\",engine=\"0\",le=\"2000.0\"} 1.0"),
            std::string::npos);
  EXPECT_EQ(m.find("vllm:request_prompt_tokens_bucket{model_name=\"qwen-x\",engine=\"0\",le=\"5000.0\"}"),
            std::string::npos);
  EXPECT_NE(m.find("http_requests_total{handler=\"/v1/chat/completions\",method=\"POST\",status=\"2xx\"} 1.0"),
            std::string::npos);
}

TEST(ServingMetrics, BucketsAndFloatsAsPython) {
  EXPECT_EQ(prom_float(1), "1.0");
  EXPECT_EQ(prom_float(0.025), "0.025");
  EXPECT_EQ(prom_float(2560), "2560.0");
  EXPECT_EQ(prom_float(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(buckets_1_2_5(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(buckets_1_2_5(7), (std::vector<double>{1, 2, 5}));
  Histogram h({1, 2});
  h.observe(0.5);
  h.observe(1.5);
  h.observe(9);
  std::string out;
  h.render("x", "a=\"b\"", out);
  EXPECT_EQ(out, "x_bucket{a=\"b\",le=\"1.0\"} 1.0\nx_bucket{a=\"b\",le=\"2.0\"} 2.0\nx_bucket{a=\"b\",le=\"+Inf\"} 3.0\n"
                 "x_count{a=\"b\"} 3.0\nx_sum{a=\"b\"} 11.0\n");
}

TEST(ServingOps, RequestIdIsTakenOrMadeAndEchoed) {
  Live s{ServeOptions{}};
  s.script("ok");
  auto r = s.post("/v1/chat/completions", chat("x"), {{"X-Request-Id", "my-trace-42"}});
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("X-Request-Id"), "my-trace-42");
  auto r2 = s.post("/v1/chat/completions", chat("x"));
  std::string made = r2->get_header_value("X-Request-Id");
  EXPECT_EQ(made.rfind("req-", 0), 0u) << made;
  auto r3 = s.post("/v1/chat/completions", chat("x"), {{"X-Request-Id", "has space"}});
  EXPECT_NE(r3->get_header_value("X-Request-Id"), "has space");
  EXPECT_EQ(s.client().Get("/health")->has_header("X-Request-Id"), true);
  EXPECT_EQ(request_id_from_header(std::string(129, 'a')).rfind("req-", 0), 0u);
}

TEST(ServingOps, AccessLogLineFormat) {
  RequestRecord r;
  r.id = "abc";
  r.prompt_tokens = 12;
  r.generation_tokens = 30;
  EXPECT_EQ(access_log_line("127.0.0.1", "POST", "/v1/chat/completions", 200, r, 0.4123),
            "access: 127.0.0.1 POST /v1/chat/completions 200 id=abc prompt_tokens=12 generation_tokens=30 time=0.412s");
}

TEST(ServingOps, CorsPreflightAndSimpleRequests) {
  {
    Live s{ServeOptions{}};  // vLLM's defaults: every origin, method and header, no credentials
    auto c = s.client();
    auto p = c.Options("/v1/chat/completions", {{"Origin", "http://ui.example"},
                                                {"Access-Control-Request-Method", "POST"},
                                                {"Access-Control-Request-Headers", "authorization, content-type"}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->status, 200);
    EXPECT_EQ(p->get_header_value("Access-Control-Allow-Origin"), "*");
    EXPECT_EQ(p->get_header_value("Access-Control-Allow-Methods"), "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT");
    EXPECT_EQ(p->get_header_value("Access-Control-Allow-Headers"), "authorization, content-type");
    EXPECT_EQ(p->get_header_value("Access-Control-Max-Age"), "600");
    auto g = c.Get("/v1/models", {{"Origin", "http://ui.example"}});
    EXPECT_EQ(g->get_header_value("Access-Control-Allow-Origin"), "*");
    EXPECT_FALSE(c.Get("/v1/models")->has_header("Access-Control-Allow-Origin"));
  }
  ServeOptions so;
  so.allowed_origins = {"http://good.example"};
  so.allowed_methods = {"GET", "POST"};
  so.allowed_headers = {"Authorization"};
  so.allow_credentials = true;
  so.api_key = "sk-x";
  Live s{so};
  auto c = s.client();
  auto ok = c.Options("/v1/completions", {{"Origin", "http://good.example"}, {"Access-Control-Request-Method", "POST"},
                                          {"Access-Control-Request-Headers", "Authorization"}});
  EXPECT_EQ(ok->status, 200);  // a preflight needs no API key
  EXPECT_EQ(ok->get_header_value("Access-Control-Allow-Origin"), "http://good.example");
  EXPECT_EQ(ok->get_header_value("Access-Control-Allow-Credentials"), "true");
  EXPECT_EQ(ok->get_header_value("Access-Control-Allow-Methods"), "GET, POST");
  auto bad = c.Options("/v1/completions", {{"Origin", "http://evil.example"}, {"Access-Control-Request-Method", "PUT"}});
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(bad->body, "Disallowed CORS origin, method");
  auto badh = c.Options("/v1/completions", {{"Origin", "http://good.example"}, {"Access-Control-Request-Method", "POST"},
                                            {"Access-Control-Request-Headers", "X-Secret"}});
  EXPECT_EQ(badh->body, "Disallowed CORS headers");
  auto simple = c.Get("/v1/models", {{"Origin", "http://evil.example"}, {"Authorization", "Bearer sk-x"}});
  EXPECT_EQ(simple->status, 200);
  EXPECT_FALSE(simple->has_header("Access-Control-Allow-Origin"));
  auto unauth = c.Get("/v1/models", {{"Origin", "http://good.example"}});
  EXPECT_EQ(unauth->status, 401);  // errors carry the CORS headers too, so a browser can read them
  EXPECT_EQ(unauth->get_header_value("Access-Control-Allow-Origin"), "http://good.example");
}

TEST(ServingOps, FullQueueIs503WithRetryAfter) {
  ServeOptions so;
  so.max_waiting = 1;
  Live s{so, true, /*max_num_seqs=*/1};
  s.script("one two three four five six seven eight nine ten");
  s.runner->delay_ms = 40;
  json b = chat("x");
  b["max_tokens"] = 8;
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int i = 0; i < 2; ++i) {  // one running + one waiting fill the server
    ts.emplace_back([&] {
      auto r = s.post("/v1/chat/completions", b);
      if (r && r->status == 200) ++ok;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  auto r = s.post("/v1/chat/completions", b);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "queue_full");
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok, 2);
  EXPECT_NE(s.client().Get("/metrics")->body.find("qinfer_requests_rejected_total{model_name=\"m\"} 1.0"),
            std::string::npos);
}

TEST(ServingOps, RequestTimeoutEndsTheRequest) {
  ServeOptions so;
  so.request_timeout = 0.3;
  Live s{so};
  s.script("one two three four five six seven eight nine ten eleven twelve");
  s.runner->delay_ms = 100;
  json b = chat("x");
  b["max_tokens"] = 30;
  b["ignore_eos"] = true;
  auto r = s.post("/v1/chat/completions", b);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 504) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "request_timeout");
  b["stream"] = true;
  auto st = s.post("/v1/chat/completions", b);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->status, 200);
  EXPECT_NE(st->body.find("\"code\":\"request_timeout\""), std::string::npos) << st->body;
  EXPECT_NE(st->body.find("data: [DONE]"), std::string::npos);
  for (int i = 0; i < 100 && s.runner->live > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(s.runner->live, 0);  // the sequences were freed
}

TEST(ServingOps, PromptLogprobsAndEchoAsVllm) {
  Live s{ServeOptions{}};
  // The scripted model puts all mass on the script's next token: prompt tokens that follow
  // the script get logprob ~0 and rank 1, the others a very low logprob.
  std::vector<int> script = s.tok->encode("The cat sat on the mat", true);
  s.runner->set_script(script);
  std::vector<int> prompt(script.begin(), script.begin() + 4);
  auto r = s.post("/v1/completions", {{"model", "m"}, {"prompt", prompt}, {"max_tokens", 2}, {"prompt_logprobs", 1}});
  ASSERT_EQ(r->status, 200) << r->body;
  json pl = json::parse(r->body)["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(pl.size(), prompt.size());
  EXPECT_TRUE(pl[0].is_null());
  for (size_t i = 1; i < prompt.size(); ++i) {
    json e = pl[i][std::to_string(prompt[i])];
    EXPECT_NEAR(e["logprob"].get<double>(), 0.0, 1e-3) << i;
    EXPECT_EQ(e["rank"], 1);
    EXPECT_EQ(e["decoded_token"], s.tok->decode({prompt[i]}, false));
  }
  // echo + logprobs: the prompt tokens lead, the first with null logprob and top_logprobs.
  auto e = s.post("/v1/completions", {{"model", "m"}, {"prompt", "The cat"}, {"max_tokens", 2}, {"echo", true},
                                      {"logprobs", 1}});
  ASSERT_EQ(e->status, 200) << e->body;
  json ch = json::parse(e->body)["choices"][0];
  size_t np = s.tok->encode("The cat", true).size();
  ASSERT_EQ(ch["logprobs"]["tokens"].size(), np + 2);
  EXPECT_TRUE(ch["logprobs"]["token_logprobs"][0].is_null());
  EXPECT_TRUE(ch["logprobs"]["top_logprobs"][0].is_null());
  EXPECT_TRUE(ch["logprobs"]["token_logprobs"][1].is_number());
  EXPECT_EQ(ch["logprobs"]["text_offset"][0], 0);
  EXPECT_EQ(ch["text"].get<std::string>().rfind("The cat", 0), 0u);
  EXPECT_EQ(ch["prompt_logprobs"].size(), np);
  // Streaming echo + logprobs: the first chunk carries the prompt's logprobs.
  auto st = s.post("/v1/completions", {{"model", "m"}, {"prompt", "The cat"}, {"max_tokens", 2}, {"echo", true},
                                       {"logprobs", 0}, {"stream", true}});
  ASSERT_EQ(st->status, 200);
  size_t a = st->body.find("data: ") + 6;
  json first = json::parse(st->body.substr(a, st->body.find("\n\n") - a));
  EXPECT_GE(first["choices"][0]["logprobs"]["tokens"].size(), np);
  // Chat: top-level prompt_logprobs; with stream it is refused as vLLM does.
  json c = chat("hi");
  c["prompt_logprobs"] = 0;
  auto cr = s.post("/v1/chat/completions", c);
  ASSERT_EQ(cr->status, 200) << cr->body;
  EXPECT_TRUE(json::parse(cr->body)["prompt_logprobs"][0].is_null());
  EXPECT_GT(json::parse(cr->body)["prompt_logprobs"].size(), 5u);
  c["stream"] = true;
  auto cs = s.post("/v1/chat/completions", c);
  EXPECT_EQ(cs->status, 400);
  EXPECT_EQ(json::parse(cs->body)["error"]["param"], "prompt_logprobs");
}

TEST(ServingOps, UnimplementedFieldsAre400NamingThem) {
  Live s{ServeOptions{}};
  s.script("ok");
  for (const char* f : {"bad_words", "priority", "use_beam_search", "allowed_token_ids"}) {
    json b = chat("x");
    const std::string n = f;
    b[f] = n == "use_beam_search" ? json(true) : n == "allowed_token_ids" ? json({1, 2}) : n == "priority" ? json(1) : json("x");
    auto r = s.post("/v1/chat/completions", b);
    ASSERT_EQ(r->status, 400) << f;
    EXPECT_EQ(json::parse(r->body)["error"]["param"], f);
  }
  json neutral = chat("x");
  neutral["bad_words"] = nullptr;
  neutral["use_beam_search"] = false;
  EXPECT_EQ(s.post("/v1/chat/completions", neutral)->status, 200);
  auto sfx = s.post("/v1/completions", {{"prompt", "def f("}, {"suffix", "return x"}});
  EXPECT_EQ(sfx->status, 400);
  EXPECT_EQ(json::parse(sfx->body)["error"]["param"], "suffix");
}

TEST(ServingOps, ChatTemplateOverrideAndDefaultKwargs) {
  std::string path = ::testing::TempDir() + "/qinfer_tmpl_test.jinja";
  {
    std::ofstream f(path);
    f << "{% for m in messages %}<<{{ m['role'] }}:{{ m['content'] }}>>{% endfor %}"
         "{% if flavour is defined %}[{{ flavour }}]{% endif %}";
  }
  ServeOptions so;
  so.chat_template = path;
  so.default_chat_template_kwargs = {{"flavour", "salty"}};
  Live s{so};
  auto t = s.post("/tokenize", chat("hi"));
  ASSERT_EQ(t->status, 200) << t->body;
  EXPECT_EQ(json::parse(t->body)["tokens"].get<std::vector<int>>(), s.tok->encode("<<user:hi>>[salty]", true));
  json c = chat("hi");
  c["chat_template_kwargs"] = {{"flavour", "sweet"}};  // the request wins over the default
  auto t2 = s.post("/tokenize", c);
  EXPECT_EQ(json::parse(t2->body)["tokens"].get<std::vector<int>>(), s.tok->encode("<<user:hi>>[sweet]", true));
  ServeOptions bad;
  bad.chat_template = "/no/such/template.jinja";
  EXPECT_THROW(HttpServer{bad}, Error);
}

TEST(ServingOps, ChatPageIsServedSelfContained) {
  Live s{ServeOptions{}};
  auto r = s.client().Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(r->body.find("/v1/chat/completions"), std::string::npos);
  EXPECT_NE(r->body.find("function renderMarkdown"), std::string::npos);
  // No external resources: every script and style is inline.
  EXPECT_EQ(r->body.find("<script src"), std::string::npos);
  EXPECT_EQ(r->body.find("<link"), std::string::npos);
  EXPECT_EQ(r->body.find("https://"), std::string::npos);
}

}  // namespace
}  // namespace qinfer::server
