// The speculative decoding counters on /metrics: vLLM's names and labels, only when
// speculation is on.
#include <gtest/gtest.h>

#include "server/metrics.h"
#include "server/serve_options.h"
#include "util/error.h"

namespace qinfer::server {
namespace {

TEST(SpecMetrics, VllmNamesPerPositionAndOnlyWhenOn) {
  Metrics m("x");
  engine::EngineStats s;
  EXPECT_EQ(m.render(s, 4, 100).find("spec_decode"), std::string::npos);
  s.spec.num_drafts = 5;
  s.spec.num_draft_tokens = 15;
  s.spec.num_accepted_tokens = 9;
  s.spec.accepted_per_pos = {5, 3, 1};
  const std::string o = m.render(s, 4, 100);
  for (const char* line : {"# TYPE vllm:spec_decode_num_drafts_total counter",
                           "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter",
                           "vllm:spec_decode_num_drafts_total{model_name=\"x\",engine=\"0\"} 5.0\n",
                           "vllm:spec_decode_num_draft_tokens_total{model_name=\"x\",engine=\"0\"} 15.0\n",
                           "vllm:spec_decode_num_accepted_tokens_total{model_name=\"x\",engine=\"0\"} 9.0\n",
                           "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"x\",engine=\"0\",position=\"0\"} 5.0\n",
                           "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"x\",engine=\"0\",position=\"2\"} 1.0\n"})
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
