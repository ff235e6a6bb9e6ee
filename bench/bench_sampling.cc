// Sampler cost per token at the Qwen3.5/3.6 vocabulary size (248,320 rows, 248,077 tokens).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "sampling/sampler.h"

namespace {

using qinfer::sampling::Sampler;
using qinfer::sampling::SamplingParams;

constexpr int32_t kRows = 248320;
constexpr int32_t kVocab = 248077;

const std::vector<float>& logits() {
  static const std::vector<float> v = [] {
    std::mt19937_64 g(1);
    std::normal_distribution<float> d(0.0f, 2.5f);
    std::vector<float> x(kRows);
    for (auto& f : x) f = d(g);
    return x;
  }();
  return v;
}

void run(benchmark::State& state, SamplingParams p) {
  p.seed = 7;
  std::vector<int32_t> prompt(2000);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(i * 97 % kVocab);
  Sampler s(p, kVocab, prompt);
  for (auto _ : state) benchmark::DoNotOptimize(s.sample(logits()).token);
}

void BM_Greedy(benchmark::State& st) {
  SamplingParams p;
  p.temperature = 0.0f;
  run(st, p);
}
void BM_Qwen3Defaults(benchmark::State& st) {  // generation_config: T=1, top_k=20, top_p=0.95
  SamplingParams p;
  p.top_k = 20;
  p.top_p = 0.95f;
  run(st, p);
}
void BM_TopPOnlyFlat(benchmark::State& st) {  // worst case: no top_k, wide distribution
  SamplingParams p;
  p.top_p = 0.95f;
  run(st, p);
}
void BM_PenaltiesAndLogprobs(benchmark::State& st) {
  SamplingParams p;
  p.top_k = 20;
  p.top_p = 0.95f;
  p.presence_penalty = 1.5f;
  p.repetition_penalty = 1.05f;
  p.top_logprobs = 20;
  run(st, p);
}

}  // namespace

BENCHMARK(BM_Greedy);
BENCHMARK(BM_Qwen3Defaults);
BENCHMARK(BM_TopPOnlyFlat);
BENCHMARK(BM_PenaltiesAndLogprobs);
