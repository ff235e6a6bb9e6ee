// Tokenizer throughput on wikitext-2 (test split, 1.29 MB):
//   ninja -C build bench_tokenizer && build/bench/bench_tokenizer
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace {

const std::string& wikitext() {
  static const std::string text = [] {
    std::ifstream f(QINFER_SOURCE_DIR "/tests/data/wikitext-2/wiki.test.raw", std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }();
  return text;
}

const qinfer::Tokenizer& tokenizer() {
  static const qinfer::Tokenizer t = qinfer::Tokenizer::load(QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5");
  return t;
}

// The whole file as one string (word cache warm after the first iteration).
void BM_EncodeWikitext(benchmark::State& state) {
  const std::string& text = wikitext();
  const auto& tok = tokenizer();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tok.encode(text);
    tokens += ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(tokens));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_EncodeWikitext)->Unit(benchmark::kMillisecond);

// Line by line, the way prompts arrive (many short calls).
void BM_EncodeWikitextLines(benchmark::State& state) {
  std::vector<std::string> lines;
  std::istringstream in(wikitext());
  for (std::string l; std::getline(in, l);) lines.push_back(l + "\n");
  const auto& tok = tokenizer();
  size_t tokens = 0;
  for (auto _ : state) {
    for (const auto& l : lines) {
      auto ids = tok.encode(l);
      tokens += ids.size();
      benchmark::DoNotOptimize(ids.data());
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(tokens));
}
BENCHMARK(BM_EncodeWikitextLines)->Unit(benchmark::kMillisecond);

void BM_DecodeWikitext(benchmark::State& state) {
  const auto& tok = tokenizer();
  const std::vector<int> ids = tok.encode(wikitext());
  for (auto _ : state) {
    auto text = tok.decode(ids);
    benchmark::DoNotOptimize(text.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * ids.size()));
}
BENCHMARK(BM_DecodeWikitext)->Unit(benchmark::kMillisecond);

void BM_Load(benchmark::State& state) {
  for (auto _ : state) {
    auto t = qinfer::Tokenizer::load(QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5");
    benchmark::DoNotOptimize(&t);
  }
}
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
