// The quantizer's per-expert hot loops at the real model's sizes (hidden 2048,
// expert intermediate 512), each fast path next to its scalar twin
// (QuantSpec::reference_impl): the damped inverse-Hessian factor for K = 2048
// (gate/up) and K = 512 (down), the GPTQ column loop of gate_proj (512 × 2048)
// and down_proj (2048 × 512), and folding 512 routed rows into an expert Hessian.
//   build/bench/bench_quant --benchmark_min_time=0.01   (one iteration of the slow ones)
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "quant/expert_hessians.h"
#include "quant/gptq.h"

namespace {

using namespace qinfer::quant;

std::vector<float> random_rows(int64_t n, int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> x(n * K);
  for (int64_t r = 0; r < n; ++r) {
    float carry = 0;
    for (int64_t k = 0; k < K; ++k) x[r * K + k] = carry = 0.5f * carry + nd(rng);
  }
  return x;
}

// S = Σ xᵀx over 1024 routed rows, through ExpertHessians (the quantizer's path).
std::vector<float> hessian(int64_t K) {
  const int64_t n = 1024;
  const std::vector<float> X = random_rows(n, K, 7);
  ExpertHessians hs(ExpertHessians::Input::kGateUp, 1, K, 0, 1);
  hs.gate_up_input(0, X.data(), n);
  hs.finish();
  return std::vector<float>(hs.S(0), hs.S(0) + K * K);
}

void BM_Factor(benchmark::State& st) {
  const int64_t K = st.range(0);
  QuantSpec s;
  s.reference_impl = st.range(1) != 0;
  const std::vector<float> S = hessian(K);
  for (auto _ : st) benchmark::DoNotOptimize(prepare_hessian(S.data(), K, 1024, s));
  st.SetLabel(s.reference_impl ? "reference" : "fast");
}

void BM_ColumnLoop(benchmark::State& st) {
  const int64_t N = st.range(0), K = st.range(1);
  QuantSpec s;
  s.reference_impl = st.range(2) != 0;
  const std::vector<float> S = hessian(K);
  const PreparedHessian h = prepare_hessian(S.data(), K, 1024, QuantSpec{});
  const std::vector<float> W = random_rows(N, K, 3);
  for (auto _ : st) benchmark::DoNotOptimize(quantize_gptq(W.data(), N, K, h, s));
  st.SetLabel(s.reference_impl ? "reference" : "fast");
}

void BM_HessianFold(benchmark::State& st) {
  const int64_t K = st.range(0), n = 512;
  const std::vector<float> X = random_rows(n, K, 5);
  for (auto _ : st) {
    ExpertHessians hs(ExpertHessians::Input::kGateUp, 1, K, 0, 1);
    hs.gate_up_input(0, X.data(), n);
    hs.finish();
    benchmark::DoNotOptimize(hs.S(0));
  }
  st.counters["GFLOP"] = benchmark::Counter(2.0 * n * K * K * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_Factor)->Args({2048, 0})->Args({2048, 1})->Args({512, 0})->Args({512, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ColumnLoop)->Args({512, 2048, 0})->Args({512, 2048, 1})->Args({2048, 512, 0})->Args({2048, 512, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HessianFold)->Arg(2048)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
