// Sequence-kernel microbenchmarks (bench_ops_seq, links
// qinfer_ops): decode attention over a long KV cache with the real model's
// dims (16 query heads, 2 kv heads, head_dim 256), split-K on and off, a causal
// prefill tile, the delta rule (32 value heads, dk = dv = 128) one token and a
// 64-token chunk, the vision tower's full attention (16 heads of 72, 1024 and
// 4096 patches, packed and not), the conv + SiLU of one token, and exp. Counters: GFLOP/s and
// GB/s (attention: key + value bytes read; delta rule: state bytes read+written).
// QINFER_BENCH_THREADS sets the thread count.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "huge_pages.h"
#include "ops/seq_kernel_table.h"
#include "util/thread_pool.h"

namespace {

using namespace qinfer::ops;
using qinfer::ops::detail::SeqKernelTable;

std::vector<float> randn(size_t n, uint32_t seed, float sd = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

void rate(benchmark::State& st, double bytes, double flops) {
  st.counters["GB/s"] = benchmark::Counter(bytes * st.iterations() / 1e9, benchmark::Counter::kIsRate);
  st.counters["GFLOP/s"] = benchmark::Counter(flops * st.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// `rows` query tokens at the end of a context of `ctx` keys (KV in 256-row blocks).
// cold: before each timed call, 256 MiB of other memory is read (the model's case at decode: a
// layer's K/V were last read a token ago, with gigabytes of weights read since). Flushing just the
// K/V (clflush) understates that cost: Zen 5, one thread, 4096 keys, 0.85 ms flushed against
// 1.03-1.41 ms after reading other memory, and 1.20-1.24 ms for the model's own call.
void bm_attention(benchmark::State& st, const SeqKernelTable* kt, int64_t ctx, int64_t rows, int64_t max_splits,
                  bool cold = false) {
  constexpr int64_t heads = 16, kvh = 2, hd = 256, block = 256;
  const int64_t width = kvh * hd, nblocks = (ctx + block - 1) / block;
  // In transparent huge pages, as the model's KvCache holds them (1.07x at 32768 keys, Zen 5).
  std::vector<const float*> kp, vp;
  const auto mem = qinfer::bench::huge_alloc<float>(static_cast<size_t>(2 * nblocks * block * width) * sizeof(float));
  for (int64_t b = 0; b < nblocks; ++b) {
    float* k = mem.get() + (2 * b) * block * width;
    float* v = k + block * width;
    const std::vector<float> rk = randn(block * width, 2 * b + 1), rv = randn(block * width, 2 * b + 2);
    std::copy(rk.begin(), rk.end(), k);
    std::copy(rv.begin(), rv.end(), v);
    kp.push_back(k);
    vp.push_back(v);
  }
  const std::vector<float> q = randn(rows * heads * hd, 99);
  std::vector<float> out(rows * heads * hd);
  std::vector<int64_t> pos(rows);
  for (int64_t t = 0; t < rows; ++t) pos[t] = ctx - rows + t;
  AttentionShape s;
  s.heads = heads, s.kv_heads = kvh, s.head_dim = hd, s.q_stride = s.out_stride = heads * hd;
  s.scale = 1.0f / 16.0f;
  AttentionSeq seq;
  seq.q = q.data(), seq.out = out.data(), seq.pos = pos.data(), seq.rows = rows;
  // Head-major blocks, as the model's KvCache holds them (QINFER_BENCH_KV_ROWS=1: both heads side by side
  // in each row, the layout before session 24).
  const bool rows_layout = std::getenv("QINFER_BENCH_KV_ROWS") != nullptr;
  seq.k = rows_layout ? KvRows{kp.data(), block, width, hd} : KvRows{kp.data(), block, hd, block * hd};
  seq.v = rows_layout ? KvRows{vp.data(), block, width, hd} : KvRows{vp.data(), block, hd, block * hd};
  AttentionOptions opt;
  opt.max_splits = max_splits;
  constexpr size_t kEvictFloats = (size_t{256} << 20) / sizeof(float);
  std::unique_ptr<float, qinfer::bench::FreeHuge> evict;
  if (cold) {
    evict = qinfer::bench::huge_alloc<float>(kEvictFloats * sizeof(float));
    std::fill(evict.get(), evict.get() + kEvictFloats, 1.0f);
  }
  for (auto _ : st) {
    if (cold) {
      st.PauseTiming();
      float sum = 0;
      for (size_t i = 0; i < kEvictFloats; i += 16) sum += evict.get()[i];   // a line at a time
      benchmark::DoNotOptimize(sum);
      st.ResumeTiming();
    }
    detail::attention_with(*kt, s, &seq, 1, opt);
    benchmark::DoNotOptimize(out.data());
  }
  double keys = 0;   // (query, key) pairs per head
  for (int64_t t = 0; t < rows; ++t) keys += double(pos[t] + 1);
  rate(st, 2.0 * ctx * width * sizeof(float), 4.0 * heads * hd * keys);
}

// The vision tower's attention: n patches of one image, 16 heads of 72, full
// (non-causal) attention, q/k/v rows in one fused qkv buffer (row stride 3 x 1152).
// pack: AttentionOptions::pack (0 automatic, 1 never).
void bm_attention_vision(benchmark::State& st, const SeqKernelTable* kt, int64_t n, int64_t pack) {
  constexpr int64_t heads = 16, hd = 72, H = heads * hd;
  const std::vector<float> qkv = randn(n * 3 * H, 11);
  std::vector<float> out(n * H);
  std::vector<int64_t> pos(n, n - 1);
  const float* kbase = qkv.data() + H;
  const float* vbase = qkv.data() + 2 * H;
  AttentionShape s;
  s.heads = s.kv_heads = heads, s.head_dim = hd, s.q_stride = 3 * H, s.out_stride = H;
  s.scale = 1.0f / std::sqrt(float(hd));
  AttentionSeq seq;
  seq.q = qkv.data(), seq.out = out.data(), seq.pos = pos.data(), seq.rows = n;
  seq.k = {&kbase, n, 3 * H, hd};
  seq.v = {&vbase, n, 3 * H, hd};
  AttentionOptions opt;
  opt.pack = pack;
  for (auto _ : st) {
    detail::attention_with(*kt, s, &seq, 1, opt);
    benchmark::DoNotOptimize(out.data());
  }
  rate(st, 2.0 * n * H * sizeof(float), 4.0 * heads * hd * double(n) * n);
}

// 32 value heads of dk = dv = 128, T tokens (T = 1: recurrent, else chunked C = 64).
void bm_delta(benchmark::State& st, const SeqKernelTable* kt, int64_t T) {
  constexpr int64_t nv = 32, dk = 128, dv = 128;
  const int64_t stride = 2 * dk + dv;
  std::vector<float> act = randn(T * stride, 5), g(T, -0.1f), beta(T, 0.5f), o(T * dv);
  std::vector<float> S = randn(nv * dk * dv, 6, 0.1f);
  std::vector<float> work(detail::delta_work_floats(dk, dv, T == 1 ? 0 : 64));
  for (auto _ : st) {
    for (int64_t h = 0; h < nv; ++h) {
      DeltaRuleIO io;
      io.T = T, io.dk = dk, io.dv = dv;
      io.q = act.data(), io.k = act.data() + dk, io.v = act.data() + 2 * dk;
      io.q_stride = io.k_stride = io.v_stride = stride;
      io.g = g.data(), io.beta = beta.data();
      io.o = o.data(), io.o_stride = dv;
      io.S = S.data() + h * dk * dv;
      if (T == 1) kt->delta_recurrent(io, work.data());
      else kt->delta_chunked(io, 64, work.data());
    }
    benchmark::DoNotOptimize(S.data());
  }
  // Recurrent: u = kᵀS, S update, o = qᵀS (6 dk dv flops); chunked ~ the same per token plus the chunk's T² terms.
  const double flops = nv * (6.0 * dk * dv * T + (T > 1 ? 2.0 * T * T * (dk + dv) : 0.0));
  rate(st, nv * 2.0 * dk * dv * sizeof(float), flops);
}

void bm_conv(benchmark::State& st, const SeqKernelTable* kt) {
  constexpr int64_t K = 4, conv_dim = 8192;
  const std::vector<float> x = randn(K * conv_dim, 7), w = randn(K * conv_dim, 8);
  std::vector<float> o(conv_dim);
  const float* rows[K];
  for (int64_t j = 0; j < K; ++j) rows[j] = x.data() + j * conv_dim;
  for (auto _ : st) {
    kt->conv_silu(rows, K, w.data(), conv_dim, 0, conv_dim, o.data());
    benchmark::DoNotOptimize(o.data());
  }
  rate(st, 2.0 * K * conv_dim * sizeof(float), 2.0 * K * conv_dim);
}

void bm_exp(benchmark::State& st, const SeqKernelTable* kt) {
  const std::vector<float> x = randn(4096, 9, 10.0f);
  std::vector<float> y(x.size());
  for (auto _ : st) {
    kt->vexp(x.data(), static_cast<int64_t>(x.size()), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["Gexp/s"] = benchmark::Counter(double(x.size()) * st.iterations() / 1e9, benchmark::Counter::kIsRate);
}

int register_all() {
  if (const char* t = std::getenv("QINFER_BENCH_THREADS")) qinfer::ThreadPool::set_global_threads(std::atoi(t));
  for (const std::string& p : detail::seq_kernel_paths()) {
    const SeqKernelTable* kt = detail::seq_kernels_for(p);
    const bool fast = p != "scalar";
    // 256 keys: the KV of a kv head fits in one core's L2, so the kernel's own
    // arithmetic rate shows (4096 and 32768 come from L3 and from memory).
    for (int64_t ctx : {int64_t{256}, int64_t{4096}, int64_t{32768}}) {
      if (!fast && ctx > 4096) continue;
      for (int64_t splits : {0, 1}) {
        const std::string name = "attention_decode_ctx" + std::to_string(ctx) + (splits == 1 ? "_nosplit/" : "_split/") + p;
        benchmark::RegisterBenchmark(name.c_str(), bm_attention, kt, ctx, 1, splits, false)
            ->Unit(benchmark::kMillisecond)->UseRealTime();
      }
    }
    if (fast)   // 4096 keys from memory: as a decode step of the model finds them
      benchmark::RegisterBenchmark(("attention_decode_ctx4096_cold/" + p).c_str(), bm_attention, kt, int64_t{4096}, int64_t{1},
                                   int64_t{0}, true)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
    if (fast)
      benchmark::RegisterBenchmark(("attention_prefill_64rows_ctx4096/" + p).c_str(), bm_attention, kt, 4096, 64, 0, false)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
    if (fast)
      for (int64_t n : {int64_t{1024}, int64_t{4096}})
        for (int64_t pack : {int64_t{0}, int64_t{1}})
          benchmark::RegisterBenchmark(("attention_vision_" + std::to_string(n) + (pack == 1 ? "_unpacked/" : "/") + p).c_str(),
                                       bm_attention_vision, kt, n, pack)
              ->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark(("delta_rule_recurrent_32heads/" + p).c_str(), bm_delta, kt, 1)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("delta_rule_chunk64_32heads/" + p).c_str(), bm_delta, kt, 64)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("conv_silu_8192ch/" + p).c_str(), bm_conv, kt)->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("vexp_4096/" + p).c_str(), bm_exp, kt)->Unit(benchmark::kMicrosecond);
  }
  return 0;
}

const int registered = register_all();

}  // namespace
