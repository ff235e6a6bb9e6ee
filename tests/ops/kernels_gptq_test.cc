#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <cstdio>
#include <numeric>

#include "kernels_test_util.h"
#include "ops/cpu_features.h"
#include "ops/matmul_table.h"
#include "util/error.h"

namespace qinfer::ops {
namespace {

using testing::available_paths;
using testing::expect_close;
using testing::PathGuard;

// Permuted: desc_act (each group has group_size columns); Random: any group per
// column, so groups have uneven (even zero) sizes.
enum class GIdx { None, Explicit, Permuted, Random };

struct Canon {
  int64_t rows, cols;
  int gs;
  std::vector<uint8_t> q, zero;
  std::vector<float> scale;
  std::vector<int32_t> g_idx;
  GptqCanonical view() const {
    return {rows, cols, gs, q.data(), scale.data(), zero.data(), g_idx.empty() ? nullptr : g_idx.data()};
  }
  float w(int64_t r, int64_t i) const {
    const int64_t groups = (cols + gs - 1) / gs;
    const int64_t g = g_idx.empty() ? i / gs : g_idx[i];
    return scale[r * groups + g] * static_cast<float>(int(q[r * cols + i]) - int(zero[r * groups + g]));
  }
};

// f16_scales: scales exactly representable in fp16 (as checkpoints store them),
// which GptqMatrix keeps in 2 bytes; otherwise arbitrary fp32 scales.
Canon make_canon(int64_t rows, int64_t cols, int gs, bool sym, GIdx gi, std::mt19937& rng, bool f16_scales = false) {
  Canon c{rows, cols, gs, {}, {}, {}, {}};
  const int64_t groups = (cols + gs - 1) / gs;
  std::uniform_int_distribution<int> code(0, 15);
  c.q.resize(rows * cols);
  for (auto& v : c.q) v = static_cast<uint8_t>(code(rng));
  c.zero.resize(rows * groups);
  for (auto& z : c.zero) z = sym ? 8 : static_cast<uint8_t>(code(rng));
  c.scale = testing::random_floats(rng, rows * groups, 0.001f, 0.05f);
  if (f16_scales)
    for (auto& v : c.scale) v = detail::f16_to_f32(testing::f32_to_f16(v));
  if (gi == GIdx::Explicit) {
    c.g_idx.resize(cols);
    for (int64_t i = 0; i < cols; ++i) c.g_idx[i] = static_cast<int32_t>(i / gs);
  } else if (gi == GIdx::Permuted) {  // desc_act: g_idx = perm(i) / gs
    std::vector<int32_t> perm(cols);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    c.g_idx.resize(cols);
    for (int64_t i = 0; i < cols; ++i) c.g_idx[i] = perm[i] / gs;
  } else if (gi == GIdx::Random) {
    std::uniform_int_distribution<int32_t> g(0, static_cast<int32_t>(groups - 1));
    c.g_idx.resize(cols);
    for (auto& v : c.g_idx) v = g(rng);
  }
  return c;
}

// ref: the exact product in double. tol: what the kernels may be off by — the
// activation quantization (each x within half a step, max|x| of its 32-column
// block / (2 (2^21 - 1)), and a block lies inside one group, so the group's max bounds it)
// times |w|, plus fp32 rounding (4e-6 of Σ|w·x|).
void reference(const Canon& c, const std::vector<float>& x, int64_t n, std::vector<double>& ref,
               std::vector<double>& tol) {
  const int64_t groups = (c.cols + c.gs - 1) / c.gs;
  std::vector<double> gmax(n * groups, 0);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < c.cols; ++i) {
      const int64_t g = c.g_idx.empty() ? i / c.gs : c.g_idx[i];
      gmax[j * groups + g] = std::max<double>(gmax[j * groups + g], std::fabs(x[j * c.cols + i]));
    }
  ref.assign(n * c.rows, 0);
  tol.assign(n * c.rows, 0);
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t i = 0; i < c.cols; ++i) {
      const double w = c.w(r, i);
      const int64_t g = c.g_idx.empty() ? i / c.gs : c.g_idx[i];
      for (int64_t j = 0; j < n; ++j) {
        const double p = w * x[j * c.cols + i];
        ref[j * c.rows + r] += p;
        tol[j * c.rows + r] += 4e-6 * std::fabs(p) + std::fabs(w) * gmax[j * groups + g] / (2.0 * 2097151) * 1.001;
      }
    }
}

// matmul with the prefill kernel for q4_panel_min+ rows forced to f (the options reset after).
std::vector<float> matmul_forced(Q4Prefill f, const GptqMatrix& m, const std::vector<float>& x, int64_t n) {
  KernelOptions o;
  o.q4_prefill = f;
  set_kernel_options(o);
  std::vector<float> y(n * m.rows());
  matmul(m, x.data(), n, y.data());
  set_kernel_options(KernelOptions{});
  return y;
}

struct Config { int64_t rows, cols; int gs; };
const Config kConfigs[] = {{1, 32, 32}, {5, 64, 32}, {13, 192, 64}, {37, 256, 128}, {66, 384, 128},
                           {9, 48, 16}, {11, 72, 24}, {3, 100, 100}};
const int64_t kNs[] = {1, 2, 3, 7, 8, 14, 22, 33};  // 14, 22: integer and panel tails of 2 and 6 rows

class GptqByPath : public ::testing::TestWithParam<std::string> {};

TEST_P(GptqByPath, MatchesCanonicalDequantization) {
  PathGuard guard(GetParam());
  std::mt19937 rng(11);
  for (const Config& cf : kConfigs)
    for (bool sym : {true, false})
      for (GIdx gi : {GIdx::None, GIdx::Explicit, GIdx::Permuted, GIdx::Random}) {
        const bool f16 = (cf.rows + int(gi)) % 2 == 0;
        Canon c = make_canon(cf.rows, cf.cols, cf.gs, sym, gi, rng, f16);
        auto m = gptq_pack(c.view());
        ASSERT_EQ(m->half_scales(), f16);
        ASSERT_EQ(m->rows(), cf.rows);
        ASSERT_EQ(m->cols(), cf.cols);
        for (int64_t n : kNs) {
          auto x = testing::random_floats(rng, n * cf.cols);
          std::vector<float> y(n * cf.rows, -999.0f);
          matmul(*m, x.data(), n, y.data());
          std::vector<double> ref, tol;
          reference(c, x, n, ref, tol);
          expect_close(y, ref, tol, 1.0,
                       qinfer::cat(GetParam(), " ", cf.rows, "x", cf.cols, " gs=", cf.gs, sym ? " sym" : " asym",
                                   f16 ? " f16-scales" : " f32-scales",
                                   " g_idx=", int(gi), " n=", n));
        }
      }
}

TEST_P(GptqByPath, BatchMatchesSeparateProducts) {
  PathGuard guard(GetParam());
  std::mt19937 rng(5);
  std::vector<Canon> cs;
  std::vector<std::unique_ptr<GptqMatrix>> ms;
  const int64_t ns[] = {1, 0, 3, 9, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};  // 20 experts: several chunks
  const int E = 20;
  for (int e = 0; e < E; ++e) {
    cs.push_back(make_canon(40 + 7 * e, 256, 32, e % 2 == 0, e == 3 ? GIdx::Permuted : GIdx::None, rng, e % 3 != 0));
    ms.push_back(gptq_pack(cs.back().view()));
  }
  std::vector<std::vector<float>> xs(E), ys(E), want(E);
  std::vector<BatchProduct> items;
  for (int e = 0; e < E; ++e) {
    xs[e] = testing::random_floats(rng, ns[e] * 256);
    ys[e].assign(ns[e] * ms[e]->rows(), -1.0f);
    want[e].assign(ns[e] * ms[e]->rows(), 0.0f);
    matmul(*ms[e], xs[e].data(), ns[e], want[e].data());
    items.push_back({ms[e].get(), nullptr, xs[e].data(), ns[e], ys[e].data()});
  }
  matmul_batch(items.data(), items.size());
  for (int e = 0; e < E; ++e) EXPECT_EQ(ys[e], want[e]) << "expert " << e;
}

// GPTQ and dense items (BF16, F32, Q8; decode and prefill row counts) in one
// pass give exactly what each product gives alone.
TEST_P(GptqByPath, MixedBatchMatchesSeparateProducts) {
  PathGuard guard(GetParam());
  std::mt19937 rng(12);
  std::vector<Canon> cs;
  std::vector<std::unique_ptr<GptqMatrix>> gs;
  for (int e = 0; e < 5; ++e) {
    cs.push_back(make_canon(24 + 16 * e, 128, 32, true, GIdx::None, rng, true));
    gs.push_back(gptq_pack(cs.back().view()));
  }
  std::vector<std::vector<uint16_t>> bf(3);
  std::vector<std::vector<float>> f32(3);
  std::vector<DenseMatrix> ds;
  for (int d = 0; d < 3; ++d) {
    const int64_t rows = 7 + 20 * d;
    auto v = testing::random_floats(rng, rows * 128);
    f32[d] = v;
    for (float x : v) bf[d].push_back(detail::f32_to_bf16(x));
    ds.push_back(d == 1 ? dense_view(WType::F32, f32[d].data(), rows, 128)
                        : dense_view(WType::BF16, bf[d].data(), rows, 128));
  }
  ds[2] = dense_to_q8(ds[2]);
  for (int64_t n : {1, 3, 9}) {
    std::vector<BatchProduct> items;
    std::vector<std::vector<float>> xs, ys, want;
    auto add = [&](const GptqMatrix* g, const DenseMatrix* d, int64_t rows) {
      xs.push_back(testing::random_floats(rng, n * 128));
      ys.emplace_back(n * rows, -1.0f);
      want.emplace_back(n * rows, 0.0f);
    };
    for (auto& g : gs) add(g.get(), nullptr, g->rows());
    for (auto& d : ds) add(nullptr, &d, d.rows);
    for (size_t i = 0; i < xs.size(); ++i) {
      const GptqMatrix* g = i < gs.size() ? gs[i].get() : nullptr;
      const DenseMatrix* d = i < gs.size() ? nullptr : &ds[i - gs.size()];
      items.push_back({g, d, xs[i].data(), n, ys[i].data()});
      if (g) matmul(*g, xs[i].data(), n, want[i].data());
      else matmul(*d, xs[i].data(), n, want[i].data());
    }
    items.insert(items.begin() + 2, BatchProduct{nullptr, nullptr, nullptr, 0, nullptr});  // empty: skipped
    matmul_batch(items.data(), items.size());
    for (size_t i = 0; i < ys.size(); ++i) EXPECT_EQ(ys[i], want[i]) << "item " << i << " n=" << n;
  }
}

// A decode token's copies for its experts are quantized once; the result must
// not depend on it (also when a copy differs in its last value).
TEST_P(GptqByPath, IdenticalInputsShareOneQuantization) {
  PathGuard guard(GetParam());
  std::mt19937 rng(13);
  std::vector<std::unique_ptr<GptqMatrix>> ms;
  for (int e = 0; e < 4; ++e) ms.push_back(gptq_pack(make_canon(32, 256, 32, e % 2 == 0, GIdx::None, rng, true).view()));
  const auto x = testing::random_floats(rng, 2 * 256);
  std::vector<std::vector<float>> xs(4, x), ys(4, std::vector<float>(2 * 32)), want = ys;
  xs[3][2 * 256 - 1] += 0.5f;
  std::vector<BatchProduct> items;
  for (int e = 0; e < 4; ++e) {
    items.push_back({ms[e].get(), nullptr, xs[e].data(), 2, ys[e].data()});
    matmul(*ms[e], xs[e].data(), 2, want[e].data());
  }
  matmul_batch(items.data(), items.size());
  for (int e = 0; e < 4; ++e) EXPECT_EQ(ys[e], want[e]) << "expert " << e;
}

INSTANTIATE_TEST_SUITE_P(Paths, GptqByPath, ::testing::ValuesIn(available_paths()),
                         [](const auto& info) { return info.param; });

TEST(GptqKernels, SimdPathsMatchScalarTwin) {
  std::mt19937 rng(9);
  for (bool f16 : {false, true}) {
    Canon c = make_canon(272, 1024, 128, false, GIdx::Permuted, rng, f16);  // big enough to use 2+ threads
    auto m = gptq_pack(c.view());
    for (int64_t n : {1, 3, 5, 33, 70}) {
      auto x = testing::random_floats(rng, n * c.cols);
      for (size_t i = 0; i < x.size(); i += 97) x[i] *= 50;  // outliers, as in real activations
      // The prefill-sized products (33, 70 rows) with each prefill kernel forced on
      // every path, so that both sides run the same one.
      for (Q4Prefill f : {Q4Prefill::kPanels, Q4Prefill::kInt}) {
        std::vector<float> want;
        {
          PathGuard g("scalar");
          want = matmul_forced(f, *m, x, n);
        }
        for (const auto& p : available_paths()) {
          PathGuard g(p);
          const std::vector<float> y = matmul_forced(f, *m, x, n);
          // Same integers, same float steps in the same order: bit-identical.
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_EQ(y[i], want[i]) << p << " n=" << n << " q4_" << q4_prefill_name(f) << " " << i;
        }
      }
    }
  }
}

// The SIMD kernel tables this CPU runs, by path name.
std::vector<std::pair<std::string, const detail::KernelTable*>> simd_tables() {
  std::vector<std::pair<std::string, const detail::KernelTable*>> tables;
  if (cpu_features().has_avx2_path()) tables.emplace_back("avx2", &detail::avx2_kernels());
  if (cpu_features().has_avx512_path()) tables.emplace_back("avx512", &detail::avx512_kernels());
  return tables;
}

// The two GPTQ kernels of every table against the scalar table's, bit for bit, at
// every activation-row count around the panel thresholds (q4_panel_min is 16 on
// scalar, 32 on avx512, 8 on avx2, so matmul alone would compare different kernels
// there): the integer kernel on 21-bit activations, the panel kernel on fp32
// activations in packed column order. And matmul on each path takes the panel
// kernel from its table's q4_panel_min on and the integer one below it.
TEST(GptqKernels, BothKernelsMatchScalarTwinAtEveryRowCount) {
  std::mt19937 rng(23);
  const auto tables = simd_tables();
  EXPECT_EQ(detail::scalar_kernels().q4_panel_min, detail::kQ4PanelMin);
  for (const auto& [name, t] : tables)
    EXPECT_EQ(t->q4_panel_min, name == "avx2" ? detail::kQ4PanelMinAvx2 : detail::kQ4PanelMinVnni);
  std::vector<std::pair<std::string, const detail::KernelTable*>> all = tables;   // matmul's paths
  all.emplace_back("scalar", &detail::scalar_kernels());
  for (GIdx gi : {GIdx::None, GIdx::Permuted}) {
    Canon c = make_canon(40, 96, 32, gi == GIdx::None, gi, rng, gi == GIdx::None);
    auto m = gptq_pack(c.view());
    const int64_t kp = m->padded_cols();
    for (int64_t n = 1; n <= detail::kQ4PanelMinVnni + 1; ++n) {
      auto x = testing::random_floats(rng, n * c.cols);
      for (size_t i = 0; i < x.size(); i += 29) x[i] *= 40;
      std::vector<float> xp(n * kp);
      for (int64_t j = 0; j < n; ++j) m->gather_input(x.data() + j * c.cols, xp.data() + j * kp);
      auto run = [&](const detail::KernelTable& t, bool panel) {
        std::vector<float> y(n * c.rows, -999.0f);
        if (panel) {
          t.gptq_rows_f32(*m, xp.data(), n, y.data(), 0, c.rows);
        } else {
          std::vector<unsigned char> mem(detail::q4_input_bytes(*m, n) + 64);
          unsigned char* p = mem.data() + (64 - reinterpret_cast<uintptr_t>(mem.data()) % 64) % 64;
          const detail::Q4Input q = detail::quantize_q4_input(t, *m, x.data(), n, p);
          t.gptq_rows(*m, q, y.data(), 0, c.rows);
        }
        return y;
      };
      for (bool panel : {false, true}) {
        const std::vector<float> want = run(detail::scalar_kernels(), panel);
        for (const auto& [name, t] : tables) {
          const std::vector<float> got = run(*t, panel);
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(got[i], want[i]) << name << (panel ? " panel" : " integer") << " n=" << n << " " << i;
        }
      }
      // matmul picks by the path's threshold (prefill kernel forced to the panels),
      // and with the integer kernel forced takes it for every row count.
      for (const auto& [name, t] : all) {
        PathGuard g(name);
        for (Q4Prefill f : {Q4Prefill::kPanels, Q4Prefill::kInt}) {
          const std::vector<float> y = matmul_forced(f, *m, x, n);
          const bool panel = f == Q4Prefill::kPanels && n >= t->q4_panel_min;
          EXPECT_EQ(y, run(*t, panel)) << name << " n=" << n << " q4_" << q4_prefill_name(f) << " expects the "
                                       << (panel ? "panel" : "integer") << " kernel";
        }
      }
    }
  }
}

// The panel kernel in column chunks (detail::kQ4PanelBlocks blocks a chunk, up to
// kQ4ChunkRows activation rows; whole panels above): sums carried across chunk boundaries
// through Y give the scalar twin's bits, with a partial last chunk, a partial last tile
// (and tile pair), stored and uniform zero points, fp16 and fp32 scales, permuted columns,
// a group that spans two chunks, and row counts on both sides of kQ4ChunkRows.
TEST(GptqKernels, PanelChunksMatchScalarTwin) {
  std::mt19937 rng(29);
  struct Case {
    int64_t rows, cols;
    int gs;
    bool sym, f16;
    GIdx gi;
  };
  const auto tables = simd_tables();
  const int64_t chunk_cols = detail::kQ4PanelBlocks * GptqMatrix::kBlock;
  for (const Case& k : {Case{40, 2 * chunk_cols + 96, 32, true, true, GIdx::None},
                        Case{56, chunk_cols + 32, 96, false, false, GIdx::None},
                        Case{24, 3 * chunk_cols - 40, 64, true, false, GIdx::Permuted}}) {
    Canon c = make_canon(k.rows, k.cols, k.gs, k.sym, k.gi, rng, k.f16);
    auto m = gptq_pack(c.view());
    const int64_t kp = m->padded_cols();
    ASSERT_GT(m->blocks(), detail::kQ4PanelBlocks);
    for (int64_t n : {int64_t{8}, int64_t{13}, detail::kQ4ChunkRows, detail::kQ4ChunkRows + 1}) {
      auto x = testing::random_floats(rng, n * c.cols);
      for (size_t i = 0; i < x.size(); i += 31) x[i] *= 40;
      std::vector<float> xp(n * kp);
      for (int64_t j = 0; j < n; ++j) m->gather_input(x.data() + j * c.cols, xp.data() + j * kp);
      auto run = [&](const detail::KernelTable& t) {
        std::vector<float> y(n * c.rows, -999.0f);
        t.gptq_rows_f32(*m, xp.data(), n, y.data(), 0, c.rows);
        return y;
      };
      const std::vector<float> want = run(detail::scalar_kernels());
      for (const auto& [p, t] : tables) {
        const std::vector<float> got = run(*t);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << p << " rows " << k.rows << " cols " << k.cols << " n=" << n << " " << i;
      }
    }
  }
}

// One-row decode with two tiles read side by side (Q4Kernel::kPairs, forced) against
// the scalar twin, bit for bit: row counts with an odd tile count and a partial last
// tile (the pairs' remainder runs tile by tile), short and long rows, stored and
// uniform zero points, fp16 and fp32 scales, permuted columns, outliers. Forcing the
// other layout gives the same bits too, and on a path without pairs forcing them is
// an error that names the option.
TEST(GptqKernels, TilePairsMatchScalarTwin) {
  std::mt19937 rng(21);
  struct Case {
    int64_t rows, cols;
    bool sym, f16;
    GIdx gi;
  };
  for (const Case& k : {Case{16, 64, true, true, GIdx::None}, Case{32, 96, false, false, GIdx::None},
                        Case{87, 2048, true, true, GIdx::None}, Case{272, 1024, false, true, GIdx::Permuted},
                        Case{1040, 512, true, false, GIdx::None}}) {
    Canon c = make_canon(k.rows, k.cols, 32, k.sym, k.gi, rng, k.f16);
    auto m = gptq_pack(c.view());
    auto x = testing::random_floats(rng, c.cols);
    for (size_t i = 0; i < x.size(); i += 37) x[i] *= 50;
    std::vector<float> want(c.rows);
    {
      PathGuard g("scalar");
      matmul(*m, x.data(), 1, want.data());
    }
    for (const auto& p : available_paths()) {
      PathGuard g(p);
      for (Q4Kernel q4 : {Q4Kernel::kTiles, Q4Kernel::kPairs}) {
        KernelOptions o;
        o.q4 = q4;
        set_kernel_options(o);
        std::vector<float> y(c.rows, -1.0f);
        if (q4 == Q4Kernel::kPairs && p != "avx512") {
          try {
            matmul(*m, x.data(), 1, y.data());
            ADD_FAILURE() << p << ": q4_pairs forced on a path without it did not fail";
          } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("q4_pairs"), std::string::npos) << e.what();
          }
        } else {
          matmul(*m, x.data(), 1, y.data());
          for (int64_t i = 0; i < c.rows; ++i)
            ASSERT_EQ(y[i], want[i]) << p << " " << q4_kernel_name(q4) << " rows=" << k.rows << " cols=" << k.cols
                                     << " row " << i;
        }
        set_kernel_options(KernelOptions{});
      }
    }
  }
}

// The one-row layout probe: quick, run once, and only where there is a choice.
TEST(GptqKernels, TileLayoutProbeChoosesQuicklyAndKeepsTheChoice) {
  for (const auto& p : available_paths()) {
    PathGuard g(p);
    const auto t0 = std::chrono::steady_clock::now();
    const Q4Kernel k = q4_kernel_for_one_row();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << p << ": GPTQ one-row layout " << q4_kernel_name(k) << " (" << s << " s)\n";
    EXPECT_LT(s, testing::kProbeRunawaySeconds) << p;
    if (p == "avx512") EXPECT_TRUE(k == Q4Kernel::kTiles || k == Q4Kernel::kPairs);
    else EXPECT_EQ(k, Q4Kernel::kTiles) << p;
    EXPECT_EQ(q4_kernel_for_one_row(), k) << p;
  }
  EXPECT_EQ(parse_kernel_options("q4_tiles").q4, Q4Kernel::kTiles);
  EXPECT_EQ(parse_kernel_options("bf16_widen,q4_pairs").q4, Q4Kernel::kPairs);
  EXPECT_EQ(parse_kernel_options("q8_int").q4, Q4Kernel::kProbe);
}

// The prefill kernel (panels or integer tiles for q4_panel_min+ rows): the probe is
// quick, runs once, keeps its choice, and matmul follows it; on an expert-sized
// product of prefill size either kernel is within the activation quantization's
// bound of the exact product, so the choice is a speed one. The scalar reference keeps
// its panels; the options parse.
TEST(GptqKernels, PrefillKernelProbeChoosesQuicklyAndBothAreExact) {
  std::mt19937 rng(31);
  Canon c = make_canon(512, 2048, 32, true, GIdx::None, rng, true);
  auto m = gptq_pack(c.view());
  const int64_t n = 80;
  auto x = testing::random_floats(rng, n * c.cols);
  for (size_t i = 0; i < x.size(); i += 41) x[i] *= 30;
  std::vector<double> ref, tol;
  reference(c, x, n, ref, tol);
  for (const auto& p : available_paths()) {
    PathGuard g(p);
    const auto t0 = std::chrono::steady_clock::now();
    const Q4Prefill k = q4_prefill_kernel();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << p << ": GPTQ prefill kernel " << q4_prefill_name(k) << " (" << s << " s)\n";
    EXPECT_LT(s, testing::kProbeRunawaySeconds) << p;
    if (p == "scalar") {
      EXPECT_EQ(k, Q4Prefill::kPanels);
    } else {
      EXPECT_TRUE(k == Q4Prefill::kPanels || k == Q4Prefill::kInt) << p;
    }
    EXPECT_EQ(q4_prefill_kernel(), k) << p;
    std::vector<float> by_probe(n * c.rows);
    matmul(*m, x.data(), n, by_probe.data());
    for (Q4Prefill f : {Q4Prefill::kPanels, Q4Prefill::kInt}) {
      {
        KernelOptions o;
        o.q4_prefill = f;
        set_kernel_options(o);
        EXPECT_EQ(q4_prefill_kernel(), f) << p;
        set_kernel_options(KernelOptions{});
      }
      const std::vector<float> y = matmul_forced(f, *m, x, n);
      // Where the BF16 panels run on AMX, so do these products unless a kernel is forced.
      if (f == k && bf16_kernel_for(16) != Bf16Kernel::kAmx) {
        EXPECT_EQ(y, by_probe) << p << ": matmul does not follow the probe's " << q4_prefill_name(k);
      }
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], ref[i], tol[i]) << p << " q4_" << q4_prefill_name(f) << " " << i;
    }
  }
  EXPECT_EQ(parse_kernel_options("q4_int").q4_prefill, Q4Prefill::kInt);
  EXPECT_EQ(parse_kernel_options("q4_tiles,q4_panels").q4_prefill, Q4Prefill::kPanels);
  EXPECT_EQ(parse_kernel_options("q4_tiles").q4_prefill, Q4Prefill::kProbe);
}

// Symmetric GPTQ prefill panels on AMX tiles (where the BF16 panels run there)
// against the scalar fp32 panels and the canonical dequantization: awkward row
// counts (partial 16-row tiles), padded groups, permuted columns, fp16 and fp32
// scales, activation counts around the 16-row token blocks, outliers.
TEST(GptqKernels, AmxPanelsMatchScalarTwin) {
  if (!cpu_features().has_avx512_path() || !cpu_features().amx_bf16)
    GTEST_SKIP() << "AMX panels need AMX-BF16 granted by the kernel, which this CPU lacks (" << cpu_features().describe()
                 << ")";
  std::mt19937 rng(21);
  const Config cfgs[] = {{1, 32, 32}, {17, 96, 24}, {40, 256, 32}, {272, 1024, 32}, {33, 384, 128}};
  for (const Config& cf : cfgs)
    for (bool f16 : {false, true})
      for (GIdx gi : {GIdx::None, GIdx::Permuted}) {
        Canon c = make_canon(cf.rows, cf.cols, cf.gs, true, gi, rng, f16);
        auto m = gptq_pack(c.view());
        ASSERT_GE(m->uniform_zero(), 0);
        for (int64_t n : {16, 17, 33, 70}) {
          auto x = testing::random_floats(rng, n * c.cols);
          for (size_t i = 0; i < x.size(); i += 97) x[i] *= 50;
          std::vector<float> want(n * c.rows), y(n * c.rows, -999.0f);
          {
            PathGuard g("scalar");
            matmul(*m, x.data(), n, want.data());
          }
          {
            PathGuard g("avx512");
            KernelOptions o;
            o.bf16 = Bf16Kernel::kAmx;
            set_kernel_options(o);
            matmul(*m, x.data(), n, y.data());
            set_kernel_options(KernelOptions{});
          }
          std::vector<double> ref, tol;
          reference(c, x, n, ref, tol);
          const std::string what = qinfer::cat(cf.rows, "x", cf.cols, " gs=", cf.gs, f16 ? " f16" : " f32",
                                               " g_idx=", int(gi), " n=", n);
          expect_close(y, ref, tol, 1.0, what);
          std::vector<double> want_d(want.begin(), want.end());
          expect_close(y, want_d, tol, 1.0, what + " vs scalar");
        }
      }
}

TEST(GptqKernels, LayoutAndSize) {
  std::mt19937 rng(1);
  Canon plain = make_canon(4, 256, 32, true, GIdx::None, rng);
  auto m = gptq_pack(plain.view());
  EXPECT_TRUE(m->identity_layout());
  EXPECT_EQ(m->padded_cols(), 256);
  EXPECT_EQ(m->groups(), 8);
  EXPECT_FALSE(m->half_scales());
  EXPECT_EQ(m->tiles(), 1);
  EXPECT_EQ(m->uniform_zero(), 8);                      // symmetric: no zero points stored
  EXPECT_EQ(m->zero(3, 7), 8);
  EXPECT_EQ(m->bytes(), 16 * 128 + 16 * 8 * 4);         // one 16-row tile: codes, fp32 scales
  Canon asym = make_canon(4, 256, 32, false, GIdx::None, rng);
  asym.zero[5] = asym.zero[0] == 3 ? 4 : 3;            // certainly not all equal
  auto ma = gptq_pack(asym.view());
  EXPECT_EQ(ma->uniform_zero(), -1);
  EXPECT_EQ(ma->zero(0, 5), asym.zero[5]);
  EXPECT_EQ(ma->bytes(), 16 * 128 + 16 * 8 * (4 + 1));  // + a zero byte per (row, group)
  Canon half = make_canon(4, 256, 32, true, GIdx::None, rng, true);
  half.scale[0] = 3 * std::ldexp(1.0f, -20);  // an fp16 subnormal is still exact
  auto mh = gptq_pack(half.view());
  EXPECT_TRUE(mh->half_scales());
  EXPECT_EQ(mh->bytes(), 16 * 128 + 16 * 8 * 2);
  EXPECT_EQ(mh->scale(0, 0), half.scale[0]);
  EXPECT_EQ(mh->scale(3, 7), half.scale[3 * 8 + 7]);
  Canon odd = make_canon(4, 72, 24, true, GIdx::None, rng);
  auto mo = gptq_pack(odd.view());
  EXPECT_FALSE(mo->identity_layout());
  EXPECT_EQ(mo->padded_cols(), 96);  // three groups of 24, each padded to 32
  Canon perm = make_canon(4, 256, 32, true, GIdx::Permuted, rng);
  EXPECT_FALSE(gptq_pack(perm.view())->identity_layout());
  Canon expl = make_canon(4, 256, 32, true, GIdx::Explicit, rng);
  EXPECT_TRUE(gptq_pack(expl.view())->identity_layout());
}

// The packed tile layout holds every canonical code, scale and zero point where
// the accessors say (rows past a tile boundary, reordered and padded columns).
TEST(GptqKernels, PackedLayoutRoundTrips) {
  std::mt19937 rng(4);
  for (GIdx gi : {GIdx::None, GIdx::Permuted, GIdx::Random})
    for (int64_t rows : {1, 16, 17, 40}) {
      Canon c = make_canon(rows, 96, 24, false, gi, rng, rows % 2 == 0);
      auto m = gptq_pack(c.view());
      EXPECT_EQ(m->tiles(), (rows + 15) / 16);
      const int64_t groups = m->groups();
      std::vector<float> x(c.cols), xp(m->padded_cols());
      for (int64_t i = 0; i < c.cols; ++i) x[i] = static_cast<float>(i + 1);
      m->gather_input(x.data(), xp.data());
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t g = 0; g < groups; ++g) {
          ASSERT_EQ(m->zero(r, g), c.zero[r * groups + g]);
          ASSERT_EQ(m->scale(r, g), c.scale[r * groups + g]);
        }
        for (int64_t p = 0; p < m->padded_cols(); ++p) {
          const int64_t src = static_cast<int64_t>(xp[p]) - 1;  // -1: padding
          const int64_t g = m->block_group(p / GptqMatrix::kBlock);
          ASSERT_GE(p, m->group_begin(g));
          ASSERT_LT(p, m->group_begin(g + 1));
          if (src < 0) ASSERT_EQ(m->code(r, p), m->zero(r, g)) << "padding weighs 0";
          else ASSERT_EQ(m->code(r, p), c.q[r * c.cols + src]) << "row " << r << " col " << src;
        }
      }
    }
}

// Accuracy of the 21-bit activations on an expert-sized product: printed, and
// bounded well below what the model's golden tolerance could notice.
TEST(GptqKernels, QuantizedActivationErrorIsSmall) {
  std::mt19937 rng(6);
  Canon c = make_canon(256, 2048, 32, true, GIdx::None, rng, true);
  auto m = gptq_pack(c.view());
  auto x = testing::random_floats(rng, c.cols);
  for (size_t i = 0; i < x.size(); i += 61) x[i] *= 30;
  std::vector<float> y(c.rows);
  matmul(*m, x.data(), 1, y.data());
  std::vector<double> ref, tol;
  reference(c, x, 1, ref, tol);
  double e2 = 0, r2 = 0;
  for (int64_t r = 0; r < c.rows; ++r) {
    e2 += (y[r] - ref[r]) * (y[r] - ref[r]);
    r2 += ref[r] * ref[r];
  }
  const double rel = std::sqrt(e2 / r2);
  std::printf("int4 x 21-bit activations, 256x2048 g32: rel-L2 error %.2e\n", rel);
  EXPECT_LT(rel, 2e-6);
}

// Every path's activation quantizer returns the reference's bytes and floats,
// on random blocks and on awkward ones (zeros, ties at .5 steps, tiny and huge
// magnitudes, subnormals, infinities, NaN).
TEST(GptqKernels, QuantizerPathsMatchScalarTwin) {
  std::mt19937 rng(21);
  const int64_t nb = 64;
  std::vector<float> x = testing::random_floats(rng, nb * 32, -3.0f, 3.0f);
  for (int i = 0; i < 32; ++i) x[32 * 1 + i] = 0.0f;
  for (int i = 0; i < 32; ++i) x[32 * 2 + i] = (i - 16) * 0.5f;         // exact ties after scaling
  for (int i = 0; i < 32; ++i) x[32 * 3 + i] = (i % 3 - 1) * 1e-35f;    // scale would overflow
  for (int i = 0; i < 32; ++i) x[32 * 4 + i] = (i % 5) * 1e-40f;        // subnormals
  for (int i = 0; i < 32; ++i) x[32 * 5 + i] = (i - 7) * 1e30f;
  x[32 * 6 + 9] = INFINITY;
  x[32 * 7 + 31] = -INFINITY;
  x[32 * 8] = NAN;
  x[32 * 9 + 3] = 5e3f;  // one outlier
  struct Out {
    std::vector<int8_t> h, m, l;
    std::vector<float> s, q;
  };
  auto run = [&](const detail::KernelTable& t) {
    Out o{std::vector<int8_t>(nb * 32), std::vector<int8_t>(nb * 32), std::vector<int8_t>(nb * 32),
          std::vector<float>(nb), std::vector<float>(nb)};
    t.q4_quantize(x.data(), nb, o.h.data(), o.m.data(), o.l.data(), o.s.data(), o.q.data());
    return o;
  };
  const Out want = run(detail::scalar_kernels());
  EXPECT_TRUE(std::isnan(want.s[6]) && std::isnan(want.s[7]) && std::isnan(want.s[8]));
  EXPECT_EQ(want.s[1], 0.0f);
  EXPECT_EQ(want.s[3], 0.0f);
  for (int64_t b = 0; b < nb; ++b) {  // reconstruction within half a step
    if (!(want.s[b] > 0)) continue;
    for (int i = 0; i < 32; ++i) {
      const int64_t k = b * 32 + i;
      const double q = double(want.h[k]) * 16384 + double(want.m[k]) * 128 + want.l[k];
      ASSERT_NEAR(q * want.s[b], x[k], 0.5001 * want.s[b] + 1e-6 * std::fabs(x[k])) << "block " << b << " " << i;
    }
  }
  std::vector<const detail::KernelTable*> tables;
  if (cpu_features().has_avx2_path()) tables.push_back(&detail::avx2_kernels());
  if (cpu_features().has_avx512_path()) tables.push_back(&detail::avx512_kernels());
  for (const auto* t : tables) {
    const Out got = run(*t);
    EXPECT_EQ(got.h, want.h) << t->name;
    EXPECT_EQ(got.m, want.m) << t->name;
    EXPECT_EQ(got.l, want.l) << t->name;
    for (int64_t b = 0; b < nb; ++b) {
      EXPECT_TRUE(got.s[b] == want.s[b] || (std::isnan(got.s[b]) && std::isnan(want.s[b]))) << t->name << " " << b;
      EXPECT_EQ(got.q[b], want.q[b]) << t->name << " " << b;
    }
  }
}

TEST(GptqKernels, ZeroAndNonFiniteActivations) {
  std::mt19937 rng(8);
  Canon c = make_canon(20, 64, 32, false, GIdx::None, rng);
  auto m = gptq_pack(c.view());
  for (const auto& p : available_paths()) {
    PathGuard guard(p);
    std::vector<float> x(2 * 64, 0.0f), y(2 * 20, -1.0f);
    x[64 + 40] = NAN;  // row 1, second block
    matmul(*m, x.data(), 2, y.data());
    for (int r = 0; r < 20; ++r) {
      EXPECT_EQ(y[r], 0.0f) << p << " zero input gives exactly 0";
      EXPECT_TRUE(std::isnan(y[20 + r])) << p << " NaN input must not vanish";
    }
  }
}

TEST(GptqKernels, BadInputIsAnError) {
  std::mt19937 rng(2);
  Canon c = make_canon(2, 64, 32, true, GIdx::Explicit, rng);
  auto expect_error = [](const GptqCanonical& v, const char* needle) {
    try {
      gptq_pack(v);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  GptqCanonical v = c.view();
  v.group_size = 0;
  expect_error(v, "group_size");
  v = c.view();
  v.cols = 60;
  v.g_idx = nullptr;
  expect_error(v, "does not divide");
  v = c.view();
  v.q = nullptr;
  expect_error(v, "non-null");
  Canon bad = c;
  bad.q[70] = 16;
  expect_error(bad.view(), "q[1][6]");
  Canon odd = make_canon(2, 48, 16, false, GIdx::Permuted, rng);  // reordered, padded layout
  odd.q[50] = 31;
  expect_error(odd.view(), "q[1][2]");
  bad = c;
  bad.zero[3] = 200;
  expect_error(bad.view(), "zero[1][1]");
  bad = c;
  bad.g_idx[5] = 2;
  expect_error(bad.view(), "g_idx[5]");
  bad = c;
  bad.scale[0] = NAN;
  expect_error(bad.view(), "scale[0][0]");
  float x[64] = {}, y[2];
  auto m = gptq_pack(c.view());
  EXPECT_THROW(matmul(*m, x, -1, y), Error);
  BatchProduct item{nullptr, nullptr, x, 1, y};
  EXPECT_THROW(matmul_batch(&item, 1), Error);  // no matrix
  DenseMatrix d = dense_view(WType::F32, x, 1, 64);
  item = {m.get(), &d, x, 1, y};
  EXPECT_THROW(matmul_batch(&item, 1), Error);  // two matrices
}

}  // namespace
}  // namespace qinfer::ops
