// Prefix caching through the server, on the tiny real-architecture fixture (token-id
// prompts: it has no tokenizer): usage.prompt_tokens_details.cached_tokens as OpenAI
// returns it (also 0 on a miss, also in the streamed usage chunk), and /metrics'
// vllm:prefix_cache_queries / vllm:prefix_cache_hits counters.
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "engine/engine.h"
#include "jinja/chat_template.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace qinfer::server {
namespace {

using json = nlohmann::json;

TEST(PrefixCacheServer, CachedTokensInUsageAndMetrics) {
  const std::string dir = std::string(QINFER_FIXTURES_DIR) + "/text/qwen35moe-tiny-s1/bf16";
  engine::EngineOptions eo;
  eo.prefix_cache_gb = 1;
  auto eng = engine::Engine::load(dir, eo);
  ServeOptions so;
  so.model_dir = dir;
  so.host = "127.0.0.1";
  so.port = 0;
  so.served_model_names = {"tiny"};
  HttpServer srv(*eng, so);
  const int port = srv.bind();
  std::thread th([&] { srv.serve(); });
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  json prompt = json::array();
  for (int i = 0; i < 600; ++i) prompt.push_back(1 + (i * 37) % 499);
  json body = {{"model", "tiny"}, {"prompt", prompt}, {"max_tokens", 3}, {"temperature", 0}};
  auto usage_of = [&](const json& b) {
    auto r = c.Post("/v1/completions", b.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
    return r ? json::parse(r->body)["usage"] : json();
  };
  const json u1 = usage_of(body);
  EXPECT_EQ(u1["prompt_tokens"], 600);
  EXPECT_EQ(u1["prompt_tokens_details"]["cached_tokens"], 0);
  const json u2 = usage_of(body);
  EXPECT_EQ(u2["prompt_tokens_details"]["cached_tokens"], 512);
  // Streamed: the usage chunk carries it too.
  json sb = body;
  sb["stream"] = true;
  sb["stream_options"] = {{"include_usage", true}};
  auto rs = c.Post("/v1/completions", sb.dump(), "application/json");
  ASSERT_TRUE(rs && rs->status == 200);
  json last_usage;
  size_t at = 0;
  while ((at = rs->body.find("data: {", at)) != std::string::npos) {
    const size_t end = rs->body.find("\n\n", at);
    const json chunk = json::parse(rs->body.substr(at + 6, end - at - 6));
    if (chunk.contains("usage") && !chunk["usage"].is_null()) last_usage = chunk["usage"];
    at = end;
  }
  EXPECT_EQ(last_usage["prompt_tokens_details"]["cached_tokens"], 512) << last_usage.dump();
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m && m->status == 200);
  EXPECT_NE(m->body.find("# TYPE vllm:prefix_cache_queries_total counter"), std::string::npos);
  EXPECT_NE(m->body.find("vllm:prefix_cache_queries_total{model_name=\"tiny\",engine=\"0\"} 1800.0"),
            std::string::npos) << m->body;
  EXPECT_NE(m->body.find("vllm:prefix_cache_hits_total{model_name=\"tiny\",engine=\"0\"} 1024.0"), std::string::npos);
  srv.stop();
  th.join();
}

}  // namespace
}  // namespace qinfer::server
