// The process's JSON reader (util/json_parse) on the largest JSON it reads at load: a
// safetensors header with one member object per tensor (the 40-layer GPTQ checkpoint has
// ~20,000 per 4 GB shard, ~123,000 in all).
//   build/bench/bench_util --benchmark_filter=json
#include <benchmark/benchmark.h>

#include <string>

#include "util/json_parse.h"

namespace {

std::string header(int tensors) {
  std::string h = "{\"__metadata__\": {\"format\": \"pt\"}";
  for (int i = 0; i < tensors; ++i)
    h += ", \"model.language_model.layers." + std::to_string(i / 3072) + ".mlp.experts." + std::to_string(i % 256) +
         ".gate_proj.qweight\": {\"dtype\": \"I32\", \"shape\": [256, 512], \"data_offsets\": [" +
         std::to_string(i * 524288LL) + ", " + std::to_string((i + 1) * 524288LL) + "]}";
  return h + "}";
}

void BM_JsonParseSafetensorsHeader(benchmark::State& st) {
  const std::string h = header(static_cast<int>(st.range(0)));
  for (auto _ : st) benchmark::DoNotOptimize(qinfer::parse_json(h, "header"));
  st.counters["MB/s"] = benchmark::Counter(static_cast<double>(h.size()) * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["tensors"] = static_cast<double>(st.range(0));
}
BENCHMARK(BM_JsonParseSafetensorsHeader)->Arg(2000)->Arg(20000)->Unit(benchmark::kMillisecond);

}  // namespace
