// Model forward benchmarks at the real Qwen3.6-35B-A3B widths (hidden 2048, 256
// experts, GPTQ int4 per-expert experts) with few layers, so they fit anywhere:
// load (per-expert unpack + repack), single decode, batched decode, prefill.
// Uses QINFER_BENCH_MODEL=DIR when set (any checkpoint folder), else writes a
// synthetic 4-layer checkpoint (3 DeltaNet + 1 attention, vocab 32768) once to
// /tmp/qinfer_bench_model. Counters: tok/s.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/synthetic_checkpoint.h"
#include "model/model.h"
#include "util/log.h"

namespace {

using qinfer::Model;

std::string model_dir() {
  if (const char* d = std::getenv("QINFER_BENCH_MODEL")) return d;
  const std::string dir = "/tmp/qinfer_bench_model";
  if (!std::filesystem::exists(dir + "/config.json")) {
    qinfer::SynthOptions o;
    o.layers = 4;
    o.vocab = 32768;
    o.max_position_embeddings = 262144;
    o.label = "bench_model";
    qinfer::write_synthetic_checkpoint(dir, o);
  }
  return dir;
}

Model& model() {
  static std::unique_ptr<Model> m = [] {
    qinfer::set_log_level(qinfer::LogLevel::kWarn);
    return Model::load(model_dir());
  }();
  return *m;
}

void BM_Load(benchmark::State& state) {
  const std::string dir = model_dir();
  qinfer::set_log_level(qinfer::LogLevel::kWarn);
  for (auto _ : state) {
    auto m = Model::load(dir);
    benchmark::DoNotOptimize(m.get());
    state.counters["weight_MiB"] = static_cast<double>(m->weight_bytes()) / (1 << 20);
  }
}
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond)->Iterations(1);

// arg 0: sequences decoded together; each sequence first gets a 64-token prefill.
void BM_Decode(benchmark::State& state) {
  Model& m = model();
  const int S = static_cast<int>(state.range(0));
  const int64_t V = m.config().text.vocab_size;
  std::vector<std::unique_ptr<qinfer::SequenceState>> seqs;
  std::vector<std::vector<float>> logits(S, std::vector<float>(V));
  std::vector<int> prompt(64), tok(S);
  for (int i = 0; i < 64; ++i) prompt[i] = (i * 37) % 1000;
  for (int s = 0; s < S; ++s) {
    seqs.push_back(m.new_sequence());
    m.forward({{seqs[s].get(), prompt.data(), 64, logits[s].data(), false}});
  }
  int64_t n = 0;
  for (auto _ : state) {
    std::vector<Model::Step> steps;
    for (int s = 0; s < S; ++s) {
      tok[s] = static_cast<int>((n * 13 + s * 7) % 1000);
      steps.push_back({seqs[s].get(), &tok[s], 1, logits[s].data(), false});
    }
    m.forward(steps);
    ++n;
  }
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(n * S), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Decode)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Prefill(benchmark::State& state) {
  Model& m = model();
  const int64_t T = state.range(0);
  std::vector<int> ids(T);
  for (int64_t i = 0; i < T; ++i) ids[i] = static_cast<int>((i * 31) % 1000);
  std::vector<float> logits(m.config().text.vocab_size);
  for (auto _ : state) {
    auto s = m.new_sequence();
    m.forward({{s.get(), ids.data(), T, logits.data(), false}});
  }
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * T), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Prefill)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
