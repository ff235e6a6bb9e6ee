// Reference kernels: plain loops, double accumulation. The SIMD paths are tested
// against these; QINFER_KERNELS=scalar runs them in the product.
#include <cstring>

#include "ops/kernel_table.h"

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
  }
}

void gptq_rows(const GptqMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1) {
  const int64_t kp = W.padded_cols();
  constexpr int B = GptqMatrix::kBlock;
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* codes = W.row_codes(r);
    const uint8_t* zr = W.row_zeros(r);
    for (int64_t j = 0; j < n; ++j) {
      const float* x = X + j * kp;
      double acc = 0;
      for (int64_t g = 0; g < W.groups(); ++g) {
        const float s = W.scale(r, g);
        const int32_t z = zr[g];
        for (int64_t b = W.group_begin(g); b < W.group_begin(g + 1); b += B) {
          const uint8_t* blk = codes + b / 2;
          for (int i = 0; i < B / 2; ++i) {
            const float w_lo = s * static_cast<float>((blk[i] & 15) - z);
            const float w_hi = s * static_cast<float>((blk[i] >> 4) - z);
            acc += static_cast<double>(w_lo) * x[b + i] + static_cast<double>(w_hi) * x[b + i + B / 2];
          }
        }
      }
      Y[j * W.rows() + r] = static_cast<float>(acc);
    }
  }
}

}  // namespace

const KernelTable& scalar_kernels() {
  static const KernelTable t{"scalar", dense_rows, gptq_rows, nullptr};
  return t;
}

}  // namespace qinfer::ops::detail
