#include "server/serve_options.h"

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "util/error.h"

namespace qinfer::server {
namespace {

ServeOptions parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_serve_options(static_cast<int>(argv.size()), argv.data());
}

TEST(ServeOptions, AcceptsTheVllmFlagSet) {
  auto o = parse({"/models/qwen", "--gpu-memory-utilization", "0.95", "--max-model-len", "256000",
                  "--tensor-parallel-size", "4", "--reasoning-parser", "qwen3", "--enable-auto-tool-choice",
                  "--tool-call-parser", "qwen3_coder", "--dtype", "float16", "--skip-mm-profiling",
                  "--limit-mm-per-prompt", "{\"image\": 2}", "--host", "127.0.0.1", "--port", "8123",
                  "--api-key", "sk-1", "--served-model-name", "qwen3.6", "--max-num-seqs", "8"});
  EXPECT_EQ(o.model_dir, "/models/qwen");
  EXPECT_EQ(o.max_model_len, 256000);
  EXPECT_EQ(o.reasoning_parser, "qwen3");
  EXPECT_EQ(o.tool_call_parser, "qwen3_coder");
  EXPECT_TRUE(o.enable_auto_tool_choice);
  EXPECT_EQ(o.max_images_per_prompt, 2);
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, 8123);
  EXPECT_EQ(o.api_key, "sk-1");
  EXPECT_EQ(o.served_model_names, std::vector<std::string>{"qwen3.6"});
  EXPECT_EQ(o.max_num_seqs, 8);
  std::vector<std::string> want = {"--gpu-memory-utilization 0.95", "--tensor-parallel-size 4",
                                   "--dtype float16", "--skip-mm-profiling"};
  EXPECT_EQ(o.ignored, want);
}

TEST(ServeOptions, SeveralServedNamesAndEqualsForm) {
  auto o = parse({"--served-model-name", "a", "b", "--port=0", "m"});
  EXPECT_EQ(o.served_model_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(o.port, 0);
  EXPECT_EQ(o.model_dir, "m");
}

void expect_fail(std::vector<std::string> args, const std::string& needle) {
  try {
    parse(args);
    ADD_FAILURE() << "no error, wanted " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ServeOptions, PrefixCachingFlags) {
  auto d = parse({"m"});
  EXPECT_TRUE(d.enable_prefix_caching);   // on by default, as vLLM V1
  EXPECT_LT(d.prefix_cache_gb, 0);        // budget from MemAvailable
  auto on = parse({"m", "--enable-prefix-caching", "--prefix-cache-gb", "2.5"});
  EXPECT_TRUE(on.enable_prefix_caching);
  EXPECT_EQ(on.prefix_cache_gb, 2.5);
  EXPECT_TRUE(on.ignored.empty());        // real flags now, not accepted-and-ignored
  EXPECT_FALSE(parse({"m", "--no-enable-prefix-caching"}).enable_prefix_caching);
  expect_fail({"m", "--prefix-cache-gb", "-1"}, "--prefix-cache-gb");
  expect_fail({"m", "--prefix-cache-gb", "lots"}, "--prefix-cache-gb");
  expect_fail({"m", "--enable-prefix-caching", "--no-enable-prefix-caching"}, "--no-enable-prefix-caching");
}

// The engine's queue bounds as flags: defaults are EngineOptions', bad values name the flag.
TEST(ServeOptions, QueueBoundFlags) {
  const engine::EngineOptions eo;
  auto d = parse({"m"});
  EXPECT_EQ(d.max_queued_seqs, eo.max_queued_seqs);
  EXPECT_EQ(d.max_queued_tokens, eo.max_queued_tokens);
  EXPECT_EQ(d.max_queued_bytes, eo.max_queued_bytes);
  auto o = parse({"m", "--max-queued-seqs", "64", "--max-queued-tokens=100000", "--max-queued-bytes-gb", "0.5"});
  EXPECT_EQ(o.max_queued_seqs, 64);
  EXPECT_EQ(o.max_queued_tokens, 100000);
  EXPECT_EQ(o.max_queued_bytes, int64_t{1} << 29);
  EXPECT_TRUE(o.ignored.empty());
  EXPECT_EQ(parse({"m", "--max-queued-bytes-gb", "4"}).max_queued_bytes, int64_t{4} << 30);
  for (const char* bad : {"0", "-3", "x", "2000000"}) expect_fail({"m", "--max-queued-seqs", bad}, "--max-queued-seqs");
  for (const char* bad : {"0", "-1", "1e3", "2199023255553"}) {
    expect_fail({"m", "--max-queued-tokens", bad}, "--max-queued-tokens");
  }
  for (const char* bad : {"0", "-1", "nan", "inf", "lots", "2000000"}) {
    expect_fail({"m", "--max-queued-bytes-gb", bad}, "--max-queued-bytes-gb");
  }
  expect_fail({"m", "--max-queued-seqs"}, "--max-queued-seqs");  // no value
  EXPECT_NE(serve_usage().find("--max-queued-seqs N"), std::string::npos);
  EXPECT_NE(serve_usage().find("--max-queued-tokens N"), std::string::npos);
  EXPECT_NE(serve_usage().find("--max-queued-bytes-gb GIB"), std::string::npos);
}

TEST(ServeOptions, ErrorsNameTheFlag) {
  expect_fail({}, "MODEL_DIR");
  expect_fail({"m", "--port", "99999"}, "--port");
  expect_fail({"m", "--port", "x"}, "--port");
  expect_fail({"m", "--max-num-seqs", "0"}, "--max-num-seqs");
  expect_fail({"m", "--reasoning-parser", "deepseek_r1"}, "--reasoning-parser");
  expect_fail({"m", "--tool-call-parser", "hermes"}, "--tool-call-parser");
  expect_fail({"m", "--limit-mm-per-prompt", "image=2"}, "--limit-mm-per-prompt");
  expect_fail({"m", "--enable-auto-tool-choice"}, "--enable-auto-tool-choice");
  expect_fail({"m", "--no-such-flag"}, "--no-such-flag");
  expect_fail({"m", "n"}, "unexpected argument");
  expect_fail({"m", "--dense", "int4"}, "--dense");
}

TEST(ServeOptions, DenseFlagAsInTheOtherCommands) {
  EXPECT_FALSE(parse({"m"}).dense_int8);
  EXPECT_TRUE(parse({"m", "--dense", "int8"}).dense_int8);
  EXPECT_FALSE(parse({"m", "--dense", "bf16"}).dense_int8);
  EXPECT_TRUE(parse({"m", "--dense-int8"}).dense_int8);
}

TEST(ServeOptions, MaxModelLenSuffixesAsVllm) {
  EXPECT_EQ(parse({"m", "--max-model-len", "32k"}).max_model_len, 32000);
  EXPECT_EQ(parse({"m", "--max-model-len", "32K"}).max_model_len, 32768);
  EXPECT_EQ(parse({"m", "--max-model-len", "1M"}).max_model_len, 1048576);
  EXPECT_EQ(parse({"m", "--max-model-len", "1m"}).max_model_len, 1000000);
  EXPECT_EQ(parse({"m", "--max-model-len", "25.6k"}).max_model_len, 25600);
  EXPECT_EQ(parse({"m", "--max-model-len", "262144"}).max_model_len, 262144);
  EXPECT_EQ(parse({"m", "--max-model-len", "-1"}).max_model_len, 0);
  EXPECT_EQ(parse({"m", "--max-model-len", "auto"}).max_model_len, 0);
  expect_fail({"m", "--max-model-len", "1.5K"}, "--max-model-len");
  expect_fail({"m", "--max-model-len", "12x"}, "--max-model-len");
  expect_fail({"m", "--max-model-len", "0"}, "--max-model-len");
  expect_fail({"m", "--max-model-len", "k"}, "--max-model-len");
}

TEST(ServeOptions, OperationalFlags) {
  auto o = parse({"m", "--chat-template", "/t.jinja", "--default-chat-template-kwargs", "{\"enable_thinking\": false}",
                  "--language-model-only", "--mm-encoder-tp-mode", "data", "--enable-prefix-caching",
                  "--ssl-keyfile", "k.pem", "--ssl-certfile", "c.pem", "--allowed-origins", "[\"http://a\"]",
                  "--allowed-methods", "[\"GET\",\"POST\"]", "--allowed-headers", "[\"Authorization\"]",
                  "--allow-credentials", "--max-waiting-requests", "5", "--request-timeout", "2.5",
                  "--drain-timeout", "7", "--disable-uvicorn-access-log"});
  EXPECT_EQ(o.chat_template, "/t.jinja");
  EXPECT_EQ(o.default_chat_template_kwargs["enable_thinking"], false);
  EXPECT_TRUE(o.language_model_only);
  EXPECT_EQ(o.mm_encoder_tp_mode, "data");
  EXPECT_TRUE(o.enable_prefix_caching);
  EXPECT_EQ(o.ssl_keyfile, "k.pem");
  EXPECT_EQ(o.ssl_certfile, "c.pem");
  EXPECT_EQ(o.allowed_origins, std::vector<std::string>{"http://a"});
  EXPECT_EQ(o.allowed_methods, (std::vector<std::string>{"GET", "POST"}));
  EXPECT_EQ(o.allowed_headers, std::vector<std::string>{"Authorization"});
  EXPECT_TRUE(o.allow_credentials);
  EXPECT_EQ(o.max_waiting, 5);
  EXPECT_DOUBLE_EQ(o.request_timeout, 2.5);
  EXPECT_DOUBLE_EQ(o.drain_timeout, 7);
  EXPECT_FALSE(o.access_log);
  EXPECT_EQ(o.ignored, std::vector<std::string>{"--mm-encoder-tp-mode data"});
  auto d = parse({"m"});
  EXPECT_EQ(d.allowed_origins, std::vector<std::string>{"*"});
  EXPECT_FALSE(d.allow_credentials);
  EXPECT_TRUE(d.access_log);
  expect_fail({"m", "--ssl-keyfile", "k.pem"}, "--ssl-certfile");
  expect_fail({"m", "--allowed-origins", "*"}, "--allowed-origins");
  expect_fail({"m", "--allowed-origins", "[1]"}, "--allowed-origins");
  expect_fail({"m", "--default-chat-template-kwargs", "[]"}, "--default-chat-template-kwargs");
  expect_fail({"m", "--mm-encoder-tp-mode", "tensor"}, "--mm-encoder-tp-mode");
  expect_fail({"m", "--request-timeout", "-1"}, "--request-timeout");
}

TEST(ServeOptions, ConnectionFlags) {
  auto d = parse({"m"});
  EXPECT_EQ(d.max_connections, 1024);
  EXPECT_EQ(d.max_connections_per_client, 256);
  EXPECT_DOUBLE_EQ(d.header_timeout_s, 5);
  auto o = parse({"m", "--max-connections", "100", "--max-connections-per-client", "0", "--header-timeout", "2.5"});
  EXPECT_EQ(o.max_connections, 100);
  EXPECT_EQ(o.max_connections_per_client, 0);
  EXPECT_DOUBLE_EQ(o.header_timeout_s, 2.5);
  EXPECT_EQ(parse({"m", "--max-connections", "100"}).max_connections_per_client, 100);  // the default, lowered
  expect_fail({"m", "--max-connections", "100", "--max-connections-per-client", "101"}, "--max-connections-per-client");
  expect_fail({"m", "--max-connections-per-client", "-1"}, "--max-connections-per-client");
  expect_fail({"m", "--header-timeout", "0"}, "--header-timeout");
}

}  // namespace
}  // namespace qinfer::server
