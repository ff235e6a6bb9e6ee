// Kernel microbenchmarks: counters GB (weight bytes streamed) and GFLOP, shown
// as rates (GB/s, GFLOP/s).
// One registration per kernel path this CPU supports, e.g.
//   build-ops/bench/bench_ops --benchmark_filter=avx512
// Threads: the global pool (all cores; QINFER_BENCH_THREADS=k uses k).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "huge_pages.h"
#include "ops/bandwidth.h"
#include "ops/bf16c.h"
#include "ops/cpu_features.h"
#include "ops/matmul.h"
#include "util/thread_pool.h"

namespace {

using namespace qinfer::ops;

// In transparent huge pages, as the model keeps its dense weights
// (model/resident.h): 4 KiB pages cost the matvec a third of its bandwidth.
struct HugeBuffer {
  std::unique_ptr<uint16_t, qinfer::bench::FreeHuge> p;
  size_t n = 0;
  uint16_t* data() { return p.get(); }
  const uint16_t* data() const { return p.get(); }
  bool empty() const { return n == 0; }
  void resize(size_t count) {
    p = qinfer::bench::huge_alloc<uint16_t>(count * sizeof(uint16_t));
    n = count;
  }
  uint16_t* begin() { return p.get(); }
  uint16_t* end() { return p.get() + n; }
};

// Cheap deterministic fill (the lm_head buffer is 1 GB): |w| in [2^-7, 2^-6), random sign.
void fill_bf16(HugeBuffer& v) {
  uint32_t s = 12345;
  for (auto& h : v) {
    s = s * 1664525u + 1013904223u;
    h = static_cast<uint16_t>(0x3c00 | ((s >> 16) & 0x83ff));
  }
}

const HugeBuffer& bf16_weights(int64_t rows, int64_t cols) {
  static std::map<std::pair<int64_t, int64_t>, HugeBuffer> cache;  // lives until exit
  auto& v = cache[{rows, cols}];
  if (v.empty()) {
    v.resize(rows * cols);
    fill_bf16(v);
  }
  return v;
}

// Random symmetric g32 int4 weights (codes from seed, fp16-exact scales, like a checkpoint's).
std::unique_ptr<GptqMatrix> make_int4(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  const int gs = 32;
  std::vector<uint8_t> q(rows * cols), z(rows * (cols / gs), 8);
  std::vector<float> s(rows * (cols / gs), 1.0f / 128);
  for (auto& c : q) c = rng() & 15;
  return gptq_pack({rows, cols, gs, q.data(), s.data(), z.data(), nullptr});
}

const GptqMatrix& int4_weights(int64_t rows, int64_t cols, int index = 0) {
  static std::map<std::tuple<int64_t, int64_t, int>, std::unique_ptr<GptqMatrix>> cache;
  auto& m = cache[{rows, cols, index}];
  if (!m) m = make_int4(rows, cols, static_cast<unsigned>(index));
  return *m;
}

std::vector<float> activations(int64_t n, int64_t cols) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> x(n * cols);
  for (auto& v : x) v = d(rng);
  return x;
}

void report(benchmark::State& st, double bytes, double flops) {
  st.counters["GB"] = benchmark::Counter(bytes * st.iterations() / 1e9, benchmark::Counter::kIsRate);
  st.counters["GFLOP"] = benchmark::Counter(flops * st.iterations() / 1e9, benchmark::Counter::kIsRate);
}

void bm_dense(benchmark::State& st, std::string path, WType t, int64_t rows, int64_t cols, int64_t n, bool bf16_dot,
              Bf16Kernel k, Q8Kernel q8) {
  set_kernel_path(path.c_str());
  // QINFER_KERNEL_OPTS applies to what the case leaves open (e.g. bf16c_t0).
  const KernelOptions env = parse_kernel_options(std::getenv("QINFER_KERNEL_OPTS"));
  KernelOptions o = env;
  o.bf16_dot = bf16_dot || env.bf16_dot;
  if (k != Bf16Kernel::kProbe) o.bf16 = k;
  if (q8 != Q8Kernel::kProbe) o.q8 = q8;
  set_kernel_options(o);
  DenseMatrix w = dense_view(WType::BF16, bf16_weights(rows, cols).data(), rows, cols);
  if (t == WType::Q8) w = dense_to_q8(w);
  HugeBuffer stream;   // BF16C: the 12-bit stream in huge pages, as the resident weights are
  if (t == WType::BF16C) {
    stream.resize(static_cast<size_t>(bf16c_stream_bytes(rows, cols) / 2));
    w = dense_to_bf16c(w, bf16c_table(w), nullptr, reinterpret_cast<uint8_t*>(stream.data()));
  }
  auto x = activations(n, cols);
  std::vector<float> y(n * rows);
  // Once untimed: the start-up probes (BF16 kernel, BF16C variant, int8 kernel) run on the
  // first product; timed, a 0.3-0.8 s probe became the single iteration google-benchmark ran.
  matmul(w, x.data(), n, y.data());
  for (auto _ : st) {
    matmul(w, x.data(), n, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  report(st, static_cast<double>(w.bytes()), 2.0 * rows * cols * n);
  set_kernel_path("");
  set_kernel_options(env);
}

void bm_int4(benchmark::State& st, std::string path, int64_t rows, int64_t cols, int64_t n, int experts) {
  set_kernel_path(path.c_str());
  std::vector<BatchProduct> items;
  auto x = activations(n, cols);
  std::vector<std::vector<float>> ys(experts, std::vector<float>(n * rows));
  double bytes = 0;
  for (int e = 0; e < experts; ++e) {
    const GptqMatrix& m = int4_weights(rows, cols, e);
    items.push_back({&m, nullptr, x.data(), n, ys[e].data()});
    bytes += m.bytes();
  }
  // Once untimed (as bm_dense): panel-sized products ask the BF16 probe whether the
  // panels run on AMX, a 0.3 s probe that would otherwise be the single timed iteration.
  matmul_batch(items.data(), items.size());
  for (auto _ : st) {
    if (experts == 1) matmul(*items[0].gptq, x.data(), n, ys[0].data());
    else matmul_batch(items.data(), items.size());
    benchmark::DoNotOptimize(ys[0].data());
  }
  report(st, bytes, 2.0 * rows * cols * n * experts);
  set_kernel_path("");
}

// Prefill's expert products as the MoE block issues them: `tokens` tokens each
// routed to `topk` distinct experts of `experts` (uniform, fixed seed), one
// matmul_batch of every expert's gathered rows -- so each item has its own,
// uneven row count (about tokens * topk / experts), as in a real prefill.
void bm_int4_moe(benchmark::State& st, std::string path, int64_t rows, int64_t cols, int tokens, int experts,
                 int topk) {
  set_kernel_path(path.c_str());
  std::vector<int64_t> count(experts, 0);
  std::mt19937 rng(7);
  for (int t = 0; t < tokens; ++t) {
    std::vector<int> pick;
    while (static_cast<int>(pick.size()) < topk) {
      const int e = static_cast<int>(rng() % static_cast<unsigned>(experts));
      if (std::find(pick.begin(), pick.end(), e) == pick.end()) pick.push_back(e);
    }
    for (int e : pick) ++count[e];
  }
  std::vector<std::vector<float>> xs(experts), ys(experts);
  std::vector<BatchProduct> items;
  double flops = 0;
  for (int e = 0; e < experts; ++e) {
    if (count[e] == 0) continue;
    xs[e] = activations(count[e], cols);
    ys[e].resize(count[e] * rows);
    items.push_back({&int4_weights(rows, cols, e), nullptr, xs[e].data(), count[e], ys[e].data()});
    flops += 2.0 * rows * cols * count[e];
  }
  matmul_batch(items.data(), items.size());   // once untimed, as bm_int4
  for (auto _ : st) {
    matmul_batch(items.data(), items.size());
    benchmark::DoNotOptimize(ys[items.size() - 1].data());
  }
  report(st, 0, flops);
  set_kernel_path("");
}

// Decode's expert traffic: `per_call` experts (n = 1) per call, taken in turn
// from a pool of `pool` matrices far larger than cache, moved into transparent
// huge pages like the model's resident experts (model/resident.h). Each call
// reads its experts from memory, as a decode step does. random: each call's
// experts drawn at random (distinct, fixed seed) as a router picks them, so they
// are apart in memory; otherwise consecutive ones, one contiguous stream.
void bm_int4_pool(benchmark::State& st, std::string path, int64_t rows, int64_t cols, int pool, int per_call,
                  bool random) {
  set_kernel_path(path.c_str());
  static std::vector<std::unique_ptr<GptqMatrix>> mats;
  static std::unique_ptr<unsigned char, qinfer::bench::FreeHuge> block;   // kept for the process
  if (static_cast<int>(mats.size()) != pool) {
    mats.clear();
    size_t total = 0;
    for (int e = 0; e < pool; ++e) {
      mats.push_back(make_int4(rows, cols, 1000u + e));
      total += static_cast<size_t>(mats.back()->storage_bytes());
    }
    block = qinfer::bench::huge_alloc<unsigned char>(total);
    unsigned char* at = block.get();
    for (auto& m : mats) {
      const size_t b = static_cast<size_t>(m->storage_bytes());
      m->move_storage(at);
      at += b;
    }
  }
  auto x = activations(1, cols);
  std::vector<std::vector<float>> ys(per_call, std::vector<float>(rows));
  std::vector<BatchProduct> items(per_call);
  double bytes = 0;
  int next = 0;
  std::mt19937 rng(17);
  std::vector<int> pick(per_call);
  for (auto _ : st) {
    for (int e = 0; e < per_call; ++e) {
      if (!random) {
        pick[e] = (next + e) % pool;
        continue;
      }
      for (bool dup = true; dup;) {   // distinct
        pick[e] = static_cast<int>(rng() % static_cast<unsigned>(pool));
        dup = std::find(pick.begin(), pick.begin() + e, pick[e]) != pick.begin() + e;
      }
    }
    if (random) std::sort(pick.begin(), pick.end());   // ascending, as the MoE block orders its items
    for (int e = 0; e < per_call; ++e) {
      const GptqMatrix& m = *mats[pick[e]];
      items[e] = {&m, nullptr, x.data(), 1, ys[e].data()};
      bytes += m.bytes();
    }
    next = (next + per_call) % pool;
    matmul_batch(items.data(), items.size());
    benchmark::DoNotOptimize(ys[0].data());
  }
  st.counters["GB"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsRate);
  set_kernel_path("");
}

// Load-time cost of repacking one expert matrix (the model has 30,720 of them).
void bm_gptq_pack(benchmark::State& st) {
  const int64_t rows = 512, cols = 2048, gs = 32;
  std::mt19937 rng(3);
  std::vector<uint8_t> q(rows * cols), z(rows * (cols / gs), 8);
  std::vector<float> s(rows * (cols / gs), 1.0f / 128);  // fp16-exact, like checkpoint scales
  for (auto& c : q) c = rng() & 15;
  for (auto _ : st) {
    auto m = gptq_pack({rows, cols, static_cast<int>(gs), q.data(), s.data(), z.data(), nullptr});
    benchmark::DoNotOptimize(m.get());
  }
  st.counters["GB"] = benchmark::Counter(rows * cols * 1e-9 * st.iterations(), benchmark::Counter::kIsRate);
}

void bm_bandwidth(benchmark::State& st) {
  Bandwidth b;
  for (auto _ : st) b = measure_bandwidth(int64_t{256} << 20, 3);
  st.counters["triad_GB/s"] = b.triad_gbs;
  st.counters["read_GB/s"] = b.read_gbs;
  st.counters["threads"] = b.threads;
}

int register_all() {
  if (const char* t = std::getenv("QINFER_BENCH_THREADS")) qinfer::ThreadPool::set_global_threads(std::atoi(t));
  benchmark::RegisterBenchmark("memory_bandwidth", bm_bandwidth)->Iterations(1)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gptq_pack_512x2048", bm_gptq_pack)->Unit(benchmark::kMicrosecond);
  std::vector<std::string> paths{"scalar"};
  if (cpu_features().has_avx2_path()) paths.push_back("avx2");
  if (cpu_features().has_avx512_path()) paths.push_back("avx512");
  for (const auto& p : paths) {
    auto dense = [&](const char* name, WType t, int64_t rows, int64_t cols, int64_t n, bool bf16_dot = false) {
      benchmark::RegisterBenchmark((std::string(name) + "/" + p).c_str(), bm_dense, p, t, rows, cols, n, bf16_dot,
                                   Bf16Kernel::kProbe, Q8Kernel::kProbe)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
    };
    auto int4 = [&](const char* name, int64_t rows, int64_t cols, int64_t n, int experts) {
      benchmark::RegisterBenchmark((std::string(name) + "/" + p).c_str(), bm_int4, p, rows, cols, n, experts)
          ->Unit(benchmark::kMicrosecond)->UseRealTime();
    };
    const bool fast = p != "scalar";
    if (fast) dense("bf16_matvec_lm_head_2048x248320", WType::BF16, 248320, 2048, 1);
    // The same weights in the lossless 12-bit form (ops/bf16c.h); GB counts its bytes.
    if (fast) dense("bf16c_matvec_lm_head_2048x248320", WType::BF16C, 248320, 2048, 1);
    if (fast) dense("bf16c_matmul_lm_head_2048x248320_n3", WType::BF16C, 248320, 2048, 3);
    dense("bf16c_matvec_2048x8192", WType::BF16C, 8192, 2048, 1);
    dense("bf16c_matvec_2048x512_in_cache", WType::BF16C, 512, 2048, 1);
    // 384 KiB: in L2 on every host (the 1.5 MiB case above is L3 on a 1 MiB L2).
    dense("bf16c_matvec_2048x128_in_l2", WType::BF16C, 128, 2048, 1);
    if (fast) dense("bf16c_matmul_2048x8192_n512", WType::BF16C, 8192, 2048, 512);
    dense("bf16_matvec_2048x8192", WType::BF16, 8192, 2048, 1);
    dense("bf16_matvec_8192x2048", WType::BF16, 2048, 8192, 1);
    dense("bf16_matmul_2048x8192_n4", WType::BF16, 8192, 2048, 4);
    // A speculative verify pass of 3 tokens on the lm_head (1 GB: from memory on any host).
    if (fast) dense("bf16_matmul_lm_head_2048x248320_n3", WType::BF16, 248320, 2048, 3);
    dense("q8_matvec_2048x8192", WType::Q8, 8192, 2048, 1);
    dense("q8_matvec_2048x512_in_cache", WType::Q8, 512, 2048, 1);   // 1 MiB: the kernel's compute rate
    if (fast) dense("q8_matvec_lm_head_2048x248320", WType::Q8, 248320, 2048, 1);
    dense("q8_matmul_2048x8192_n4", WType::Q8, 8192, 2048, 4);
    // The same with each kernel forced (QINFER_KERNEL_OPTS=q8_int / q8_widen; the probe picks
    // one per host above), where the path has the integer one (avx512, scalar).
    for (auto [name, rows, cols, n] : {std::tuple<const char*, int64_t, int64_t, int64_t>{"lm_head_2048x248320", 248320, 2048, 1},
                                       {"2048x8192", 8192, 2048, 1}, {"2048x512_in_cache", 512, 2048, 1},
                                       {"2048x8192_n4", 8192, 2048, 4}})
      if (p != "avx2" && (fast || rows < 248320))
        for (Q8Kernel k : {Q8Kernel::kInt, Q8Kernel::kWiden})
          benchmark::RegisterBenchmark(("q8_" + std::string(n == 1 ? "matvec_" : "matmul_") + name + "/" + p + "/q8_" +
                                        q8_kernel_name(k)).c_str(),
                                       bm_dense, p, WType::Q8, rows, cols, n, false, Bf16Kernel::kProbe, k)
              ->Unit(benchmark::kMillisecond)->UseRealTime();
    if (fast && p != "avx2")  // --dense int8 prefill panels, each kernel forced (the panel probe picks one)
      for (int64_t n : {8, 32, 128, 512})
        for (Q8Kernel k : {Q8Kernel::kInt, Q8Kernel::kWiden})
          benchmark::RegisterBenchmark(("q8_matmul_2048x8192_n" + std::to_string(n) + "/" + p + "/q8_" +
                                        q8_kernel_name(k)).c_str(),
                                       bm_dense, p, WType::Q8, 8192, 2048, n, false, Bf16Kernel::kProbe, k)
              ->Unit(benchmark::kMillisecond)->UseRealTime();
    if (fast && p != "avx2")  // 4096-wide rows (DeltaNet and attention output projections)
      for (Q8Kernel k : {Q8Kernel::kInt, Q8Kernel::kWiden})
        benchmark::RegisterBenchmark(("q8_matmul_4096x2048_n512/" + p + "/q8_" + q8_kernel_name(k)).c_str(), bm_dense,
                                     p, WType::Q8, 2048, 4096, 512, false, Bf16Kernel::kProbe, k)
            ->Unit(benchmark::kMillisecond)->UseRealTime();
    int4("int4_matvec_expert_512x2048", 512, 2048, 1, 1);
    int4("int4_matvec_8experts_512x2048", 512, 2048, 1, 8);
    int4("int4_matvec_64experts_512x2048", 512, 2048, 1, 64);
    if (fast)
      benchmark::RegisterBenchmark(("int4_matvec_8of256experts_1024x2048/" + p).c_str(), bm_int4_pool, p, 1024, 2048,
                                   256, 8, false)->Unit(benchmark::kMicrosecond)->UseRealTime();
    if (fast)  // the same with the experts drawn at random, as a router picks them
      benchmark::RegisterBenchmark(("int4_matvec_8of256experts_random_1024x2048/" + p).c_str(), bm_int4_pool, p, 1024,
                                   2048, 256, 8, true)->Unit(benchmark::kMicrosecond)->UseRealTime();
    if (fast)  // the same with gate and up as separate matrices (per-expert checkpoints): 16 of 512 a call
      benchmark::RegisterBenchmark(("int4_matvec_16of512experts_512x2048/" + p).c_str(), bm_int4_pool, p, 512, 2048,
                                   512, 16, false)->Unit(benchmark::kMicrosecond)->UseRealTime();
    if (fast)  // the same from a pool far larger than any L3 (2.4 GB): DRAM-bound
      benchmark::RegisterBenchmark(("int4_matvec_16of4096experts_512x2048/" + p).c_str(), bm_int4_pool, p, 512, 2048,
                                   4096, 16, false)->Unit(benchmark::kMicrosecond)->UseRealTime();
    if (fast) {
      dense("bf16_matmul_2048x8192_n64", WType::BF16, 8192, 2048, 64);
      dense("bf16_matmul_2048x8192_n512", WType::BF16, 8192, 2048, 512);
      dense("bf16_matmul_4096x2048_n512", WType::BF16, 2048, 4096, 512);   // 4096-wide rows: output projections
      // Expert-sized token counts around the panel threshold (kQ4PanelMin), then prefill sizes.
      for (int64_t n : {4, 8, 12, 16, 24})
        int4(("int4_matmul_expert_512x2048_n" + std::to_string(n)).c_str(), 512, 2048, n, 1);
      int4("int4_matmul_expert_512x2048_n64", 512, 2048, 64, 1);
      int4("int4_matmul_expert_512x2048_n512", 512, 2048, 512, 1);
      benchmark::RegisterBenchmark(("int4_matmul_moe_512tok_1024x2048/" + p).c_str(), bm_int4_moe, p, 1024, 2048,
                                   512, 256, 8)->Unit(benchmark::kMillisecond)->UseRealTime();
    }
    if (fast)  // each exact decode kernel the probe chooses from, forced (short and long rows)
      for (Bf16Kernel k : {Bf16Kernel::kWiden, Bf16Kernel::kWidenT0, Bf16Kernel::kWidenNoPf, Bf16Kernel::kWidenTiled,
                           Bf16Kernel::kWiden256, Bf16Kernel::kSplit3, Bf16Kernel::kSplit}) {
        if ((k == Bf16Kernel::kWiden256 || k == Bf16Kernel::kSplit3 || k == Bf16Kernel::kSplit) && p != "avx512")
          continue;
        // 2048x512_in_cache (2 MiB): the kernel's compute rate with the weights in L2.
        for (auto [name, rows, cols] : {std::tuple<const char*, int64_t, int64_t>{"lm_head_2048x248320", 248320, 2048},
                                        {"2048x8192", 8192, 2048}, {"8192x2048", 2048, 8192},
                                        {"2048x512_in_cache", 512, 2048}})
          benchmark::RegisterBenchmark(("bf16_matvec_" + std::string(name) + "/" + p + "/" + bf16_kernel_name(k)).c_str(),
                                       bm_dense, p, WType::BF16, rows, cols, 1, false, k, Q8Kernel::kProbe)
              ->Unit(benchmark::kMillisecond)->UseRealTime();
      }
    if (fast)  // each exact panel kernel the probe chooses from, forced (prefill shapes)
      for (Bf16Kernel k : {Bf16Kernel::kWiden, Bf16Kernel::kSplit3, Bf16Kernel::kAmx}) {
        if (k != Bf16Kernel::kWiden && p != "avx512") continue;
        if (k == Bf16Kernel::kAmx && !cpu_features().amx_bf16) continue;
        for (int64_t n : {32, 128, 512})
          benchmark::RegisterBenchmark(("bf16_matmul_2048x8192_n" + std::to_string(n) + "/" + p + "/" +
                                        bf16_kernel_name(k)).c_str(),
                                       bm_dense, p, WType::BF16, 8192, 2048, n, false, k, Q8Kernel::kProbe)
              ->Unit(benchmark::kMillisecond)->UseRealTime();
      }
    if (p == "avx512") {  // opt-in bf16_dot variant (less exact, see kernels.h)
      dense("bf16dot_matvec_2048x8192", WType::BF16, 8192, 2048, 1, true);
      dense("bf16dot_matmul_2048x8192_n64", WType::BF16, 8192, 2048, 64, true);
      dense("bf16dot_matmul_2048x8192_n512", WType::BF16, 8192, 2048, 512, true);
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace
