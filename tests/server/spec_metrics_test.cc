// The speculative decoding counters on /metrics: vLLM's names and labels, only when
// speculation is on.
#include <gtest/gtest.h>

#include "server/metrics.h"
#include "server/serve_options.h"
#include "util/error.h"

namespace qinfer::server {
namespace {

TEST(SpecMetrics, VllmNamesPerPositionAndOnlyWhenOn) {
  Metrics m;
  engine::EngineStats s;
  EXPECT_EQ(m.render(s, "x").find("spec_decode"), std::string::npos);
  s.spec.num_drafts = 5;
  s.spec.num_draft_tokens = 15;
  s.spec.num_accepted_tokens = 9;
  s.spec.accepted_per_pos = {5, 3, 1};
  const std::string o = m.render(s, "x");
  for (const char* line : {"# TYPE vllm:spec_decode_num_drafts counter",
                           "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"x\"} 5",
                           "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"x\"} 15",
                           "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"x\"} 9",
                           "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"x\",position=\"0\"} 5",
                           "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"x\",position=\"2\"} 1"})
    EXPECT_NE(o.find(line), std::string::npos) << line << "\n" << o;
}

TEST(SpecMetrics, ServeParsesSpeculativeConfig) {
  std::vector<std::string> args = {"/m", "--speculative-config",
                                   "{\"method\":\"qwen3_5_mtp\",\"num_speculative_tokens\":2}"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ServeOptions o = parse_serve_options(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(o.spec.num_speculative_tokens, 2);
  EXPECT_TRUE(o.ignored.empty());
  args[2] = "{\"method\":\"mtp\",\"num_speculative_tokens\":7}";
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  EXPECT_THROW(parse_serve_options(static_cast<int>(argv.size()), argv.data()), Error);
}

}  // namespace
}  // namespace qinfer::server
