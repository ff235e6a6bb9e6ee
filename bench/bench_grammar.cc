// Structured-output cost on the real Qwen3.5 vocabulary (248k tokens, assets/tokenizer):
//   BM_Compile/<schema>      schema -> grammar tree -> NFA -> DFA start (what a new schema costs)
//   BM_FirstMask/<schema>    the mask of a state seen for the first time (one vocabulary walk)
//   BM_CachedMask/<schema>   the mask of a state seen before (a copy of the cached bitset)
//   BM_Output/<schema>       one whole constrained output with a fresh grammar (cold caches):
//                            time of mask + advance only (the uniform draw among the allowed
//                            tokens is not timed), us_per_token includes first-visit walks
#include <benchmark/benchmark.h>

#include <chrono>
#include <random>

#include "grammar/compiler.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

using namespace qinfer;
using namespace qinfer::grammar;

namespace {

const std::shared_ptr<const TokenVocab>& vocab() {
  static auto v = TokenVocab::from_tokenizer(Tokenizer::load(std::string(QINFER_SOURCE_DIR) + "/assets/tokenizer/qwen3.5"));
  return v;
}

const char* const kSchemas[] = {
    // 0: a small flat object
    R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 40}, "age": {"type": "integer", "minimum": 0, "maximum": 150}, "email": {"type": "string", "format": "email"}}, "required": ["name", "age"]})",
    // 1: nested objects, arrays, enums, optional fields
    R"({"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "status": {"enum": ["open", "closed", "pending"]},
        "items": {"type": "array", "maxItems": 5, "items": {"type": "object", "properties": {"sku": {"type": "string", "pattern": "[A-Z]{3}-[0-9]{4}"},
        "qty": {"type": "integer", "minimum": 1, "maximum": 99}, "price": {"type": "number", "minimum": 0, "maximum": 10000}}, "required": ["sku", "qty"]}},
        "note": {"type": "string", "maxLength": 80}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4}},
        "required": ["id", "status", "items"]})",
    // 2: any JSON object (response_format json_object)
    nullptr,
};

Spec spec(int i) {
  if (!kSchemas[i]) return {SpecKind::kJsonObject, "", "bench"};
  return {SpecKind::kJsonSchema, kSchemas[i], "bench"};
}

void BM_Compile(benchmark::State& st) {
  vocab();
  const Spec s = spec(int(st.range(0)));
  for (auto _ : st) {
    Grammar g(spec_tree(s), vocab());
    benchmark::DoNotOptimize(&g);
  }
}
BENCHMARK(BM_Compile)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

void BM_FirstMask(benchmark::State& st) {
  const Spec s = spec(int(st.range(0)));
  // The state after `{"` (inside the first key) for schemas, inside a string for json_object.
  for (auto _ : st) {
    st.PauseTiming();
    auto g = std::make_shared<const Grammar>(spec_tree(s), vocab());
    Matcher m(g, {248046}, vocab()->size());
    st.ResumeTiming();
    benchmark::DoNotOptimize(m.mask(true));
  }
}
BENCHMARK(BM_FirstMask)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

void BM_CachedMask(benchmark::State& st) {
  auto g = std::make_shared<const Grammar>(spec_tree(spec(int(st.range(0)))), vocab());
  Matcher m(g, {248046}, vocab()->size());
  m.mask(true);
  for (auto _ : st) benchmark::DoNotOptimize(m.mask(true));
}
BENCHMARK(BM_CachedMask)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

void BM_Output(benchmark::State& st) {
  const Spec s = spec(int(st.range(0)));
  int64_t tokens = 0;
  std::mt19937 rng(1);
  std::vector<int> allowed;
  for (auto _ : st) {
    auto g = std::make_shared<const Grammar>(spec_tree(s), vocab());
    Matcher m(g, {248046}, vocab()->size());
    double secs = 0;
    for (int step = 0; step < 256 && !m.terminated(); ++step) {
      auto t0 = std::chrono::steady_clock::now();
      const uint64_t* mask = m.mask(true);
      secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      allowed.clear();
      for (int w = 0; w < (vocab()->size() + 63) / 64; ++w) {
        for (uint64_t b = mask[w]; b; b &= b - 1) allowed.push_back(w * 64 + __builtin_ctzll(b));
      }
      const int t = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      ++tokens;
      if (t == 248046) break;
      t0 = std::chrono::steady_clock::now();
      m.accept(t);
      secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    st.SetIterationTime(secs);
  }
  st.counters["tokens"] = benchmark::Counter(double(tokens), benchmark::Counter::kAvgIterations);
  st.counters["us_per_token"] = benchmark::Counter(double(tokens) * 1e-6, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Output)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(5)->UseManualTime();

}  // namespace
