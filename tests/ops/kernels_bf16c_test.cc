// BF16C (ops/bf16c.h): the encoding is lossless, and every kernel path's products
// equal the plain BF16 kernels' bit for bit (same fp32 operations in the same
// order), escapes included; the SIMD paths also against the scalar twin.
#include <gtest/gtest.h>

#include "kernels_test_util.h"
#include "ops/bf16c.h"
#include "ops/matmul_table.h"
#include "util/error.h"

namespace qinfer::ops {
namespace {

using testing::available_paths;
using testing::PathGuard;

// rows x cols bf16 weights ~ N(0, 0.02), with escapes: rare exponents (tiny and
// large values) in about 2% of blocks, in the first and last block of row 1, and in
// every block of row 2 (when the matrix has that many rows).
std::vector<uint16_t> make_weights(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<uint16_t> w(static_cast<size_t>(rows * cols));
  for (auto& v : w) v = detail::f32_to_bf16(nd(rng));
  std::uniform_int_distribution<int64_t> pick(0, rows * cols - 1);
  const float odd[] = {3.0e-30f, -7.5f, 1.0e20f, -2.0e-25f};
  for (int64_t i = 0; i < rows * cols / 3000 + 1; ++i) w[pick(rng)] = detail::f32_to_bf16(odd[i % 4]);
  if (rows > 1) {
    w[cols] = detail::f32_to_bf16(odd[0]);
    w[2 * cols - 1] = detail::f32_to_bf16(odd[1]);
  }
  if (rows > 2)
    for (int64_t k = 0; k < cols; k += 64) w[2 * cols + k + 5] = detail::f32_to_bf16(odd[2]);
  return w;
}

struct Shape { int64_t rows, cols; };
const Shape kShapes[] = {{1, 64}, {3, 128}, {17, 192}, {37, 1024}, {100, 512}, {41, 4096}};
const int64_t kNs[] = {1, 2, 3, 4, 5, 7, 8, 9, 33, 130};  // 2-7: tiles; 8+: prefill scratch; 130: panels

TEST(Bf16c, EncodingIsLossless) {
  std::mt19937 rng(1);
  for (const Shape& s : kShapes) {
    const auto w = make_weights(s.rows, s.cols, rng);
    const DenseMatrix b = dense_view(WType::BF16, w.data(), s.rows, s.cols);
    ASSERT_TRUE(bf16c_encodable(b));
    const Bf16cTable t = bf16c_table(b);
    const DenseMatrix c = dense_to_bf16c(b, t);
    ASSERT_EQ(c.type, WType::BF16C);
    EXPECT_EQ(c.weight_bytes(), bf16c_stream_bytes(s.rows, s.cols));
    EXPECT_EQ(c.weight_bytes() * 4, s.rows * s.cols * 2 * 3);   // 0.75 of BF16
    ASSERT_EQ(c.bf16c->esc_start.size(), static_cast<size_t>(s.rows + 1));
    bool odd_in_table = false;   // small matrices use fewer than 16 high bytes: the table takes rare ones too
    for (uint8_t h : c.bf16c->table) odd_in_table |= h == (detail::f32_to_bf16(1.0e20f) >> 8);
    if (s.rows > 2 && !odd_in_table) {
      EXPECT_GE(c.bf16c->esc_start[3] - c.bf16c->esc_start[2], s.cols / 64);
    }
    std::vector<uint16_t> row(s.cols);
    for (int64_t r = 0; r < s.rows; ++r) {
      detail::bf16c_decode_row(c, r, row.data());
      for (int64_t k = 0; k < s.cols; ++k)
        ASSERT_EQ(row[k], w[r * s.cols + k]) << s.rows << "x" << s.cols << " [" << r << "][" << k << "]";
    }
  }
}

TEST(Bf16c, TableCoversTypicalWeights) {
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<uint16_t> w(512 * 2048);
  for (auto& v : w) v = detail::f32_to_bf16(nd(rng));
  const Bf16cTable t = bf16c_table(dense_view(WType::BF16, w.data(), 512, 2048));
  EXPECT_LT(t.escape_share, 0.02);   // ~0.5% of blocks (docs/PERFORMANCE.md)
}

// On every path, BF16C products equal BF16's bit for bit. The one-row BF16 kernel is
// forced to widen (rows one after another; the tiled variant sums in another order).
class Bf16cByPath : public ::testing::TestWithParam<std::string> {};

TEST_P(Bf16cByPath, EqualsBf16BitForBit) {
  PathGuard guard(GetParam());
  const KernelOptions saved = kernel_options();
  KernelOptions o;
  o.bf16 = Bf16Kernel::kWiden;
  set_kernel_options(o);
  std::mt19937 rng(3);
  for (const Shape& s : kShapes) {
    const auto w = make_weights(s.rows, s.cols, rng);
    const DenseMatrix b = dense_view(WType::BF16, w.data(), s.rows, s.cols);
    const DenseMatrix c = dense_to_bf16c(b, bf16c_table(b));
    for (int64_t n : kNs) {
      const auto x = testing::random_floats(rng, n * s.cols);
      std::vector<float> yb(n * s.rows, -1.0f), yc(n * s.rows, -2.0f), ybatch(n * s.rows, -3.0f);
      matmul(b, x.data(), n, yb.data());
      matmul(c, x.data(), n, yc.data());
      BatchProduct item;   // the shared pass (MoE) reaches the same kernels
      item.dense = &c;
      item.X = x.data();
      item.n = n;
      item.Y = ybatch.data();
      matmul_batch(&item, 1);
      for (size_t i = 0; i < yb.size(); ++i) {
        ASSERT_EQ(yb[i], yc[i]) << GetParam() << " " << s.rows << "x" << s.cols << " n=" << n << " output " << i;
        ASSERT_EQ(yb[i], ybatch[i]) << GetParam() << " batch " << s.rows << "x" << s.cols << " n=" << n;
      }
    }
  }
  set_kernel_options(saved);
}

// Every one-row prefetch variant (matvec_rows modes) sums alike.
TEST_P(Bf16cByPath, DecodeVariantsAgree) {
  PathGuard guard(GetParam());
  const detail::KernelTable& t = GetParam() == "avx512" ? detail::avx512_kernels()
                                 : GetParam() == "avx2" ? detail::avx2_kernels() : detail::scalar_kernels();
  if (!t.matvec_rows) GTEST_SKIP() << "no matvec_rows on " << GetParam();
  std::mt19937 rng(4);
  const auto w = make_weights(45, 2048, rng);
  const DenseMatrix b = dense_view(WType::BF16, w.data(), 45, 2048);
  const DenseMatrix c = dense_to_bf16c(b, bf16c_table(b));
  const auto x = testing::random_floats(rng, 2048);
  std::vector<float> want(45);
  t.matvec_rows(detail::kMatvecSeqNta, b, x.data(), want.data(), 0, 45);
  for (int mode : {detail::kMatvecSeqNta, detail::kMatvecSeqT0, detail::kMatvecSeqNone, detail::kMatvecTiled}) {
    std::vector<float> y(45, 0.0f);
    t.matvec_rows(mode, c, x.data(), y.data(), 3, 45);   // from an odd row on
    t.matvec_rows(mode, c, x.data(), y.data(), 0, 3);
    for (int64_t r = 0; r < 45; ++r) ASSERT_EQ(y[r], want[r]) << GetParam() << " mode " << mode << " row " << r;
  }
}

// QINFER_KERNEL_OPTS=bf16c_* forces the one-row variant (the probe still runs for
// whether the form pays); the forced products equal the plain BF16 ones.
TEST_P(Bf16cByPath, ForcedDecodeVariant) {
  PathGuard guard(GetParam());
  const KernelOptions saved = kernel_options();
  EXPECT_EQ(parse_kernel_options("bf16c_t0").bf16c, Bf16cKernel::kT0);
  EXPECT_EQ(parse_kernel_options("q4_tiles,bf16c_none").bf16c, Bf16cKernel::kNone);
  EXPECT_EQ(parse_kernel_options("bf16c_nta").bf16c, Bf16cKernel::kNta);
  EXPECT_EQ(parse_kernel_options("bf16_widen").bf16c, Bf16cKernel::kProbe);
  try {
    parse_kernel_options("bf16c_t1");
    ADD_FAILURE() << "bf16c_t1 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bf16c_none"), std::string::npos) << e.what();
  }
  std::mt19937 rng(6);
  const auto w = make_weights(77, 1024, rng);
  const DenseMatrix b = dense_view(WType::BF16, w.data(), 77, 1024);
  const DenseMatrix c = dense_to_bf16c(b, bf16c_table(b));
  const auto x = testing::random_floats(rng, 1024);
  KernelOptions o;
  o.bf16 = Bf16Kernel::kWiden;
  set_kernel_options(o);
  std::vector<float> want(77);
  matmul(b, x.data(), 1, want.data());
  const bool tuned = GetParam() != "scalar";
  for (Bf16cKernel k : {Bf16cKernel::kNta, Bf16cKernel::kT0, Bf16cKernel::kNone}) {
    o.bf16c = k;
    set_kernel_options(o);
    EXPECT_EQ(bf16c_kernel_for_one_row(), tuned ? k : Bf16cKernel::kNta) << GetParam() << " " << bf16c_kernel_name(k);
    std::vector<float> y(77, -1.0f);
    matmul(c, x.data(), 1, y.data());
    for (int64_t r = 0; r < 77; ++r) ASSERT_EQ(y[r], want[r]) << GetParam() << " " << bf16c_kernel_name(k) << " row " << r;
  }
  set_kernel_options(saved);
}

INSTANTIATE_TEST_SUITE_P(Paths, Bf16cByPath, ::testing::ValuesIn(available_paths()),
                         [](const auto& info) { return info.param; });

// The SIMD kernels against the scalar twin (double sums) on awkward sizes.
TEST(Bf16c, SimdPathsMatchScalarTwin) {
  std::mt19937 rng(5);
  const auto w = make_weights(131, 576, rng);
  const DenseMatrix b = dense_view(WType::BF16, w.data(), 131, 576);
  const DenseMatrix c = dense_to_bf16c(b, bf16c_table(b));
  for (const int64_t n : {1, 3, 6, 33, 129}) {
    const auto x = testing::random_floats(rng, n * 576);
    std::vector<float> want(n * 131);
    {
      PathGuard g("scalar");
      matmul(c, x.data(), n, want.data());
    }
    for (const auto& p : available_paths()) {
      PathGuard g(p);
      std::vector<float> y(n * 131);
      matmul(c, x.data(), n, y.data());
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << p << " n=" << n << " " << i;
    }
  }
}

// A view of the first rows (as model::row_prefix makes for MTP drafts' vocab limit)
// shares the stream and the whole escape index.
TEST(Bf16c, RowPrefixViewMatchesBf16) {
  std::mt19937 rng(7);
  const auto w = make_weights(50, 256, rng);
  const DenseMatrix b = dense_view(WType::BF16, w.data(), 50, 256);
  const DenseMatrix c = dense_to_bf16c(b, bf16c_table(b));
  DenseMatrix v;
  v.type = WType::BF16C;
  v.rows = 21;
  v.cols = 256;
  v.data = c.weights();
  v.bf16c = c.bf16c;
  const auto x = testing::random_floats(rng, 256);
  std::vector<float> want(50), got(21);
  matmul(c, x.data(), 1, want.data());
  matmul(v, x.data(), 1, got.data());
  for (int64_t r = 0; r < 21; ++r) EXPECT_EQ(got[r], want[r]) << r;
}

TEST(Bf16c, Int8FromBf16cEqualsInt8FromBf16) {
  std::mt19937 rng(6);
  const auto w = make_weights(20, 256, rng);
  const DenseMatrix b = dense_view(WType::BF16, w.data(), 20, 256);
  const DenseMatrix qb = dense_to_q8(b), qc = dense_to_q8(dense_to_bf16c(b, bf16c_table(b)));
  EXPECT_EQ(qb.row_scale, qc.row_scale);
  EXPECT_EQ(qb.owned, qc.owned);
}

TEST(Bf16c, BadInputIsAnError) {
  std::vector<uint16_t> w(4 * 96, 0x3c00);
  std::vector<float> f(4 * 64, 1.0f), x(96, 1.0f), y(4);
  EXPECT_THROW(bf16c_table(dense_view(WType::BF16, w.data(), 4, 96)), Error);          // 96 columns
  EXPECT_THROW(bf16c_table(dense_view(WType::F32, f.data(), 4, 64)), Error);           // not BF16
  EXPECT_FALSE(bf16c_encodable(dense_view(WType::BF16, w.data(), 4, 96)));
  const DenseMatrix b = dense_view(WType::BF16, w.data(), 4, 64);
  DenseMatrix c = dense_to_bf16c(b, bf16c_table(b));
  DenseMatrix no_aux = c;
  no_aux.bf16c.reset();
  EXPECT_THROW(matmul(no_aux, x.data(), 1, y.data()), Error);
  DenseMatrix short_stream = c;
  short_stream.owned.resize(10);
  EXPECT_THROW(matmul(short_stream, x.data(), 1, y.data()), Error);
}

}  // namespace
}  // namespace qinfer::ops
