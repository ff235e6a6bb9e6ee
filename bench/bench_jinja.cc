// Chat-template cost: parsing the Qwen template and rendering conversations.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "jinja/chat_template.h"

namespace {

std::string qwen_source() {
  std::ifstream f(QINFER_SOURCE_DIR "/tests/data/jinja/chat_template.qwen3.6-derived.jinja");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

nlohmann::ordered_json conversation(int turns) {
  using J = nlohmann::ordered_json;
  J msgs = J::array();
  msgs.push_back({{"role", "system"}, {"content", "You are a helpful assistant."}});
  for (int i = 0; i < turns; ++i) {
    msgs.push_back({{"role", "user"}, {"content", "Question number " + std::to_string(i) + " about the weather?"}});
    J call = {{"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}, {"days", i}}}}}};
    msgs.push_back({{"role", "assistant"}, {"content", ""}, {"reasoning_content", "Need the tool."}, {"tool_calls", J::array({call})}});
    msgs.push_back({{"role", "tool"}, {"content", "{\"temp\": 21}"}});
    msgs.push_back({{"role", "assistant"}, {"content", std::string(400, 'x')}});
  }
  return msgs;
}

void BM_ParseQwenTemplate(benchmark::State& st) {
  std::string src = qwen_source();
  for (auto _ : st) benchmark::DoNotOptimize(qinfer::ChatTemplate::from_string(src));
}
BENCHMARK(BM_ParseQwenTemplate);

void BM_RenderQwen(benchmark::State& st) {
  auto ct = qinfer::ChatTemplate::from_string(qwen_source());
  auto msgs = conversation(static_cast<int>(st.range(0)));
  auto tools = nlohmann::ordered_json::parse(
      R"([{"type":"function","function":{"name":"get_weather","description":"Get weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])");
  size_t bytes = 0;
  for (auto _ : st) {
    std::string out = ct.apply(msgs, tools, true);
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  st.counters["messages"] = static_cast<double>(msgs.size());
  st.counters["out_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderQwen)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);

}  // namespace
