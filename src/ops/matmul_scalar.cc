// Reference kernels: plain loops, double accumulation (dense); integer dot
// products (GPTQ). The SIMD paths are tested
// against these; QINFER_KERNELS=scalar runs them in the product.
#include <xmmintrin.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/matmul_table.h"

namespace qinfer::ops::detail {

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: renormalize
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) { mant <<= 1; --exp; }
      mant &= 0x3ff;
      u = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Per block: m = max|x|; a non-finite value makes the block NaN, a block whose
// scale would overflow (m below ~1e-32, or 0) quantizes to zero; else
// q = round-to-nearest-even(x * (kQ4Max / m)), split into three bytes.
void q4_quantize_scalar(const float* x, int64_t nblocks, int8_t* xh, int8_t* xm, int8_t* xl, float* sx,
                        float* sxq) {
  constexpr int B = GptqMatrix::kBlock;
  for (int64_t b = 0; b < nblocks; ++b) {
    const float* xb = x + b * B;
    float m = 0;
    bool finite = true;
    for (int i = 0; i < B; ++i) {
      finite &= std::isfinite(xb[i]);
      m = std::max(m, std::fabs(xb[i]));
    }
    int32_t q[B] = {};
    float s = 0;
    const float inv = static_cast<float>(kQ4Max) / m;
    if (!finite) {
      s = NAN;
    } else if (m > 0 && inv <= FLT_MAX) {
      s = m / static_cast<float>(kQ4Max);
      for (int i = 0; i < B; ++i)
        // cvtss2si rounds to nearest even (the default mode), like nearbyint without the libm call
        q[i] = std::clamp(_mm_cvtss_si32(_mm_set_ss(xb[i] * inv)), -kQ4Max, kQ4Max);
    }
    int64_t sum = 0;
    for (int i = 0; i < B; ++i) {
      sum += q[i];
      xh[b * B + i] = static_cast<int8_t>(q[i] >> 14);         // floor(q / 2^14): -128..127
      xm[b * B + i] = static_cast<int8_t>((q[i] >> 7) & 127);  // 0..127
      xl[b * B + i] = static_cast<int8_t>(q[i] & 127);         // 0..127
    }
    sx[b] = s;
    sxq[b] = static_cast<float>(sum);
  }
}

namespace {

template <typename Get>
void dense_rows_impl(Get get, const DenseMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1) {
  const int64_t K = W.cols;
  for (int64_t r = r0; r < r1; ++r) {
    const float scale = W.type == WType::Q8 ? W.row_scale[r] : 1.0f;
    for (int64_t j = 0; j < n; ++j) {
      const float* x = X + j * K;
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(get(r * K + k)) * x[k];
      Y[j * W.rows + r] = static_cast<float>(acc * scale);
    }
  }
}

void dense_rows(const DenseMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1) {
  const void* p = W.weights();
  switch (W.type) {
    case WType::F32: {
      auto w = static_cast<const float*>(p);
      return dense_rows_impl([w](int64_t i) { return w[i]; }, W, X, n, Y, r0, r1);
    }
    case WType::BF16: {
      auto w = static_cast<const uint16_t*>(p);
      return dense_rows_impl([w](int64_t i) { return bf16_to_f32(w[i]); }, W, X, n, Y, r0, r1);
    }
    case WType::F16: {
      auto w = static_cast<const uint16_t*>(p);
      return dense_rows_impl([w](int64_t i) { return f16_to_f32(w[i]); }, W, X, n, Y, r0, r1);
    }
    case WType::Q8: {
      auto w = static_cast<const int8_t*>(p);
      return dense_rows_impl([w](int64_t i) { return static_cast<float>(w[i]); }, W, X, n, Y, r0, r1);
    }
    case WType::BF16C: {   // each row decoded (bf16c_decode_row), then BF16's sums
      std::vector<uint16_t> row(static_cast<size_t>(W.cols));
      for (int64_t r = r0; r < r1; ++r) {
        detail::bf16c_decode_row(W, r, row.data());
        const uint16_t* w = row.data();
        const int64_t base = r * W.cols;   // dense_rows_impl indexes by r * K + k
        dense_rows_impl([w, base](int64_t i) { return bf16_to_f32(w[i - base]); }, W, X, n, Y, r, r + 1);
      }
      return;
    }
  }
}

// The integer int8 product (Q8Input): exact integer sums, then q8_int_output, as
// the SIMD twin (bit-identical results).
void q8_int_rows(const DenseMatrix& W, const Q8Input& X, float* Y, int64_t r0, int64_t r1) {
  const int8_t* w = static_cast<const int8_t*>(W.weights());
  const int64_t K = W.cols;
  for (int64_t r = r0; r < r1; ++r) {
    const int8_t* row = w + r * K;
    for (int64_t j = 0; j < X.n; ++j) {
      const int8_t* h = X.h + j * X.ld;
      const int8_t* l = X.l + j * X.ld;
      int64_t sh = 0, sl = 0;
      for (int64_t k = 0; k < K; ++k) {
        const int32_t u = row[k] + 128;   // the SIMD kernel's unsigned operand
        sh += u * h[k];
        sl += u * l[k];
      }
      const int64_t d = sh * (int64_t{1} << 7) + sl - 128 * X.sxq[j];
      Y[j * W.rows + r] = q8_int_output(d, X.sx[j], W.row_scale[r]);
    }
  }
}

// Integer dot product per block, then the same float steps, in the same order,
// as the SIMD paths (so every path gives bit-identical results).
void gptq_rows(const GptqMatrix& W, const Q4Input& X, float* Y, int64_t r0, int64_t r1) {
  constexpr int B = GptqMatrix::kBlock, TR = GptqMatrix::kTileRows;
  const int64_t kp = X.kp, nb = W.blocks();
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* lane = W.tile_codes(r / TR) + 4 * (r % TR);
    for (int64_t j = 0; j < X.n; ++j) {
      const int8_t* xh = X.xh + j * kp;
      const int8_t* xm = X.xm + j * kp;
      const int8_t* xl = X.xl + j * kp;
      auto xq = [&](int64_t c) { return (xh[c] << 14) + (xm[c] << 7) + xl[c]; };
      float acc = 0;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = lane + b * GptqMatrix::kTileBlockBytes;
        int32_t dot = 0;
        for (int ch = 0; ch < 4; ++ch)
          for (int e = 0; e < 4; ++e) {
            const int lo = blk[64 * ch + e] & 15, hi = blk[64 * ch + e] >> 4;
            const int64_t c = b * B + 8 * ch + e;
            dot += lo * xq(c) + hi * xq(c + 4);  // |dot| <= 32 * 15 * (2^21 - 1) < 2^31
          }
        const int64_t g = W.block_group(b);
        const float d = std::fma(-static_cast<float>(W.zero(r, g)), X.sxq[j * nb + b], static_cast<float>(dot));
        acc = std::fma(W.scale(r, g) * X.sx[j * nb + b], d, acc);
      }
      Y[j * W.rows() + r] = acc;
    }
  }
}

// fp32 path: w = fma(s, q, -(s*z)), then one fma per column in order, as the
// SIMD panels do per lane.
void gptq_rows_f32(const GptqMatrix& W, const float* Xp, int64_t n, float* Y, int64_t r0, int64_t r1) {
  const int64_t kp = W.padded_cols();
  std::vector<float> w(kp);
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t p = 0; p < kp; ++p) {
      const int64_t g = W.block_group(p / GptqMatrix::kBlock);
      const float s = W.scale(r, g);
      const float sz = s * static_cast<float>(W.zero(r, g));
      w[p] = std::fma(s, static_cast<float>(W.code(r, p)), -sz);
    }
    for (int64_t j = 0; j < n; ++j) {
      const float* x = Xp + j * kp;
      float acc = 0;
      for (int64_t p = 0; p < kp; ++p) acc = std::fma(x[p], w[p], acc);
      Y[j * W.rows() + r] = acc;
    }
  }
}

// Twin of the AVX-512 vdpbf16ps kernel: BF16 weights times bf16 activations Xb
// [n][round_up(W.cols, kBf16DotPad)], double accumulation.
void bf16_dot_rows(const DenseMatrix& W, const uint16_t* Xb, int64_t n, float* Y, int64_t r0, int64_t r1) {
  const uint16_t* w = static_cast<const uint16_t*>(W.weights());
  const int64_t K = W.cols, ldx = (K + kBf16DotPad - 1) / kBf16DotPad * kBf16DotPad;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += static_cast<double>(bf16_to_f32(w[r * K + k])) * bf16_to_f32(Xb[j * ldx + k]);
      Y[j * W.rows + r] = static_cast<float>(acc);
    }
}

}  // namespace

const KernelTable& scalar_kernels() {
  static const KernelTable t{"scalar", dense_rows, gptq_rows, gptq_rows_f32, q4_quantize_scalar, bf16_dot_rows, nullptr,
                             q8_int_rows, nullptr, nullptr, nullptr, kQ4PanelMin};
  return t;
}

}  // namespace qinfer::ops::detail
