// The attention core: every SIMD path this CPU runs against the scalar twin,
// the scalar twin against a double-precision softmax, split-K on and off, on
// awkward head sizes, context lengths, GQA groups and causal tiles, with keys
// and values stored in blocks of 256 rows like the KV cache.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ops/attention_kernels.h"
#include "ops/seq_kernel_table.h"
#include "util/error.h"

namespace qinfer::ops {
namespace {

// A KV cache of `len` rows of kv_heads * hd values (+ 3 floats of row padding),
// in blocks of 256 rows, and `rows` query tokens at positions len - rows .. len - 1.
// head_major: the same values read as head-major blocks (each head's 256 rows
// contiguous, hd + 3 floats apart), as the model's KvCache keeps them.
struct Problem {
  AttentionShape shape;
  int64_t rows = 0, len = 0;
  std::vector<std::unique_ptr<float[]>> kblocks, vblocks;
  std::vector<const float*> kptr, vptr;
  std::vector<float> q;
  std::vector<int64_t> pos;
  bool head_major = false;

  Problem(int64_t heads, int64_t kv_heads, int64_t hd, int64_t rows_, int64_t len_, uint32_t seed) : rows(rows_), len(len_) {
    shape.heads = heads;
    shape.kv_heads = kv_heads;
    shape.head_dim = hd;
    shape.q_stride = heads * hd + 5;
    shape.out_stride = heads * hd;
    shape.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t stride = kv_heads * (hd + 3), nblocks = (len + 255) / 256;   // room for either layout
    for (int64_t b = 0; b < nblocks; ++b) {
      kblocks.emplace_back(new float[256 * stride]);
      vblocks.emplace_back(new float[256 * stride]);
      for (int64_t i = 0; i < 256 * stride; ++i) kblocks.back()[i] = 1.5f * nd(rng), vblocks.back()[i] = nd(rng);
      kptr.push_back(kblocks.back().get());
      vptr.push_back(vblocks.back().get());
    }
    q.resize(rows * shape.q_stride);
    for (auto& x : q) x = 1.5f * nd(rng);
    for (int64_t t = 0; t < rows; ++t) pos.push_back(len - rows + t);
  }
  // Every query row sees all len keys (the vision tower's full attention).
  Problem& full() {
    for (auto& p : pos) p = len - 1;
    return *this;
  }
  AttentionSeq seq(float* out) const {
    AttentionSeq s;
    s.q = q.data();
    s.out = out;
    s.pos = pos.data();
    s.rows = rows;
    const int64_t hd = shape.head_dim;
    if (head_major) {
      s.k = {kptr.data(), 256, hd + 3, 256 * (hd + 3)};
      s.v = {vptr.data(), 256, hd + 3, 256 * (hd + 3)};
    } else {
      s.k = {kptr.data(), 256, shape.kv_heads * hd + 3, hd};
      s.v = {vptr.data(), 256, shape.kv_heads * hd + 3, hd};
    }
    return s;
  }
  // pack: AttentionOptions::pack (1 = never, 2 = always), pack_items its tile size.
  std::vector<float> run(const detail::SeqKernelTable& kt, int64_t max_splits, int64_t tile_rows = 16,
                         int64_t pack = 1, int64_t pack_items = 96) const {
    std::vector<float> out(rows * shape.out_stride, NAN);
    const AttentionSeq s = seq(out.data());
    AttentionOptions opt;
    opt.max_splits = max_splits;
    opt.tile_rows = tile_rows;
    opt.pack = pack;
    opt.pack_items = pack_items;
    detail::attention_with(kt, shape, &s, 1, opt);
    return out;
  }
  // Double precision, straight from the definition.
  std::vector<double> reference() const {
    const int64_t hd = shape.head_dim, group = shape.heads / shape.kv_heads;
    const AttentionSeq s = seq(nullptr);
    std::vector<double> out(rows * shape.out_stride, 0.0);
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t h = 0; h < shape.heads; ++h) {
        const float* qh = q.data() + t * shape.q_stride + h * hd;
        const int64_t g = h / group, n = pos[t] + 1;
        std::vector<double> sc(n);
        double m = -INFINITY, l = 0;
        for (int64_t p = 0; p < n; ++p) {
          double d = 0;
          for (int64_t e = 0; e < hd; ++e) d += double(qh[e]) * s.k.at(p, g)[e];
          sc[p] = d * shape.scale;
          m = std::max(m, sc[p]);
        }
        for (int64_t p = 0; p < n; ++p) {
          const double w = std::exp(sc[p] - m);
          l += w;
          for (int64_t e = 0; e < hd; ++e) out[t * shape.out_stride + h * hd + e] += w * s.v.at(p, g)[e];
        }
        for (int64_t e = 0; e < hd; ++e) out[t * shape.out_stride + h * hd + e] /= l;
      }
    return out;
  }
};

template <class A, class B>
double max_diff(const std::vector<A>& a, const std::vector<B>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (!(d <= worst)) worst = d;   // NaN propagates
  }
  return worst;
}

struct Case {
  int64_t heads, kv_heads, hd, rows, len;
};

const Case kCases[] = {
    {8, 1, 24, 1, 1},     {8, 1, 24, 1, 63},    {8, 1, 40, 1, 65},  {16, 2, 36, 1, 1100}, {2, 2, 17, 1, 300},
    {8, 8, 32, 3, 64},    {8, 1, 20, 37, 120},  {4, 2, 64, 19, 19}, {16, 2, 256, 1, 700},  {8, 1, 48, 16, 1030},
};

std::string name(const Case& c) {
  return "heads " + std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) + " hd " + std::to_string(c.hd) +
         " rows " + std::to_string(c.rows) + " len " + std::to_string(c.len);
}

// Long-prefill shapes for the packed path: causal tiles over a cache, GQA, and
// the vision tower's full attention (16 heads of 72, every row sees every key).
struct PrefillCase {
  int64_t heads, kv_heads, hd, rows, len;
  bool full;
};

const PrefillCase kPrefill[] = {
    {16, 16, 72, 300, 300, true}, {8, 1, 20, 37, 120, false}, {4, 2, 64, 130, 130, false},
    {2, 2, 17, 61, 61, true},     {8, 2, 40, 45, 700, false}, {16, 2, 256, 40, 200, false},
    {3, 3, 9, 1, 5, false},       {4, 4, 72, 129, 129, true},
};

std::string name(const PrefillCase& c) {
  return "heads " + std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) + " hd " + std::to_string(c.hd) +
         " rows " + std::to_string(c.rows) + " len " + std::to_string(c.len) + (c.full ? " full" : " causal");
}

Problem make(const PrefillCase& c, uint32_t seed) {
  Problem p(c.heads, c.kv_heads, c.hd, c.rows, c.len, seed);
  if (c.full) p.full();
  return p;
}

TEST(AttentionKernels, ScalarTwinMatchesDoubleReference) {
  uint32_t seed = 1;
  for (const Case& c : kCases) {
    const Problem p(c.heads, c.kv_heads, c.hd, c.rows, c.len, seed++);
    const std::vector<double> ref = p.reference();
    EXPECT_LT(max_diff(p.run(detail::seq_scalar_kernels(), 1), ref), 2e-5) << name(c);
    EXPECT_LT(max_diff(p.run(detail::seq_scalar_kernels(), 1, 16, 2), ref), 2e-5) << "packed: " << name(c);
  }
  for (const PrefillCase& c : kPrefill) {
    const Problem p = make(c, seed++);
    const std::vector<double> ref = p.reference();
    EXPECT_LT(max_diff(p.run(detail::seq_scalar_kernels(), 1), ref), 2e-5) << name(c);
    EXPECT_LT(max_diff(p.run(detail::seq_scalar_kernels(), 1, 16, 2), ref), 2e-5) << "packed: " << name(c);
  }
}

// The packed path (keys/values copied head-contiguous, register-blocked tiles)
// of every SIMD table against the scalar twin, forced on, automatic, with odd
// tile sizes and with split-K.
TEST(AttentionKernels, PackedPathMatchesScalarTwin) {
  uint32_t seed = 300;
  for (const std::string& path : detail::seq_kernel_paths()) {
    const detail::SeqKernelTable& kt = *detail::seq_kernels_for(path);
    for (const PrefillCase& c : kPrefill) {
      const Problem p = make(c, seed++);
      const std::vector<float> want = p.run(detail::seq_scalar_kernels(), 1);
      EXPECT_LT(max_diff(p.run(kt, 1, 16, 2), want), 2e-5) << path << " packed: " << name(c);
      EXPECT_LT(max_diff(p.run(kt, 1, 16, 2, 5), want), 2e-5) << path << " packed, 5 items: " << name(c);
      EXPECT_LT(max_diff(p.run(kt, 1, 16, 2, 29), want), 2e-5) << path << " packed, 29 items: " << name(c);
      EXPECT_LT(max_diff(p.run(kt, 3, 16, 2, 24), want), 2e-5) << path << " packed, split 3: " << name(c);
      EXPECT_LT(max_diff(p.run(kt, 0, 16, 0), want), 2e-5) << path << " automatic: " << name(c);
      EXPECT_LT(max_diff(p.run(kt, 1, 16, 1), want), 2e-5) << path << " unpacked: " << name(c);
    }
  }
}

TEST(AttentionKernels, EverySimdPathMatchesScalarTwin) {
  uint32_t seed = 100;
  for (const std::string& path : detail::seq_kernel_paths()) {
    const detail::SeqKernelTable& kt = *detail::seq_kernels_for(path);
    for (const Case& c : kCases) {
      const Problem p(c.heads, c.kv_heads, c.hd, c.rows, c.len, seed++);
      const std::vector<float> want = p.run(detail::seq_scalar_kernels(), 1);
      EXPECT_LT(max_diff(p.run(kt, 1), want), 2e-5) << path << ": " << name(c);
      EXPECT_LT(max_diff(p.run(kt, 1, 5), want), 2e-5) << path << " tile 5: " << name(c);
    }
  }
}

// Head-major blocks (the model's KvCache layout): the scalar twin against the
// double reference, every SIMD path against the twin, split-K and the packed path.
TEST(AttentionKernels, HeadMajorBlocks) {
  uint32_t seed = 400;
  for (const Case& c : kCases) {
    Problem p(c.heads, c.kv_heads, c.hd, c.rows, c.len, seed++);
    p.head_major = true;
    const std::vector<float> want = p.run(detail::seq_scalar_kernels(), 1);
    EXPECT_LT(max_diff(want, p.reference()), 2e-5) << name(c);
    for (const std::string& path : detail::seq_kernel_paths()) {
      const detail::SeqKernelTable& kt = *detail::seq_kernels_for(path);
      EXPECT_LT(max_diff(p.run(kt, 1), want), 2e-5) << path << ": " << name(c);
      EXPECT_LT(max_diff(p.run(kt, 3), want), 2e-5) << path << " split 3: " << name(c);
      EXPECT_LT(max_diff(p.run(kt, 1, 16, 2), want), 2e-5) << path << " packed: " << name(c);
    }
    // The same values read the other way are a different cache: the layout is honoured.
    if (c.kv_heads > 1) {
      Problem rows(c.heads, c.kv_heads, c.hd, c.rows, c.len, seed - 1);
      EXPECT_GT(max_diff(rows.run(detail::seq_scalar_kernels(), 1), want), 1e-3) << name(c);
    }
  }
}

TEST(AttentionKernels, SplitKEqualsUnsplit) {
  uint32_t seed = 200;
  for (const std::string& path : detail::seq_kernel_paths()) {
    const detail::SeqKernelTable& kt = *detail::seq_kernels_for(path);
    for (const Case& c : kCases) {
      const Problem p(c.heads, c.kv_heads, c.hd, c.rows, c.len, seed++);
      const std::vector<float> whole = p.run(kt, 1);
      for (int64_t splits : {0, 2, 3, 7})
        EXPECT_LT(max_diff(p.run(kt, splits), whole), 1e-5) << path << " splits " << splits << ": " << name(c);
    }
  }
}

// Two sequences of different lengths in one call, one of them prefilling.
TEST(AttentionKernels, SeveralSequencesInOneCall) {
  const Problem a(8, 2, 40, 1, 900, 7), b(8, 2, 40, 21, 90, 8);
  const detail::SeqKernelTable& kt = detail::seq_kernels();
  std::vector<float> oa(a.rows * a.shape.out_stride), ob(b.rows * b.shape.out_stride);
  const AttentionSeq seqs[2] = {a.seq(oa.data()), b.seq(ob.data())};
  attention(a.shape, seqs, 2);
  EXPECT_LT(max_diff(oa, a.run(kt, 1)), 2e-6);
  EXPECT_LT(max_diff(ob, b.run(kt, 1)), 2e-6);
}

TEST(AttentionKernels, BadArgumentsThrow) {
  const Problem p(8, 2, 16, 2, 10, 9);
  std::vector<float> out(p.rows * p.shape.out_stride);
  const AttentionSeq s = p.seq(out.data());
  AttentionShape bad = p.shape;
  bad.kv_heads = 3;
  EXPECT_THROW(attention(bad, &s, 1), Error);
  bad = p.shape;
  bad.q_stride = 8;
  EXPECT_THROW(attention(bad, &s, 1), Error);
  AttentionSeq overlap = s;   // two kv heads 16 floats apart in rows 16 floats apart
  overlap.k.row_stride = 16;
  EXPECT_THROW(attention(p.shape, &overlap, 1), Error);
  AttentionSeq nullq = s;
  nullq.q = nullptr;
  EXPECT_THROW(attention(p.shape, &nullq, 1), Error);
  std::vector<int64_t> neg = {0, -1};
  AttentionSeq negpos = s;
  negpos.pos = neg.data();
  EXPECT_THROW(attention(p.shape, &negpos, 1), Error);
  AttentionOptions opt;
  opt.max_splits = -2;
  EXPECT_THROW(attention(p.shape, &s, 1, opt), Error);
  opt = {};
  opt.pack = 3;
  EXPECT_THROW(attention(p.shape, &s, 1, opt), Error);
  opt = {};
  opt.pack_items = 0;
  EXPECT_THROW(attention(p.shape, &s, 1, opt), Error);
  EXPECT_THROW(detail::seq_kernels_for("sse9"), Error);
}

}  // namespace
}  // namespace qinfer::ops
