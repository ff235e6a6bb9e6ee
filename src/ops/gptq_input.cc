// Quantizes the activations of a GPTQ product for the integer kernels (see
// Q4Input in kernel_table.h): gather into packed column order, then per block of
// 32 columns a 21-bit symmetric scale. Shared by every kernel path, so all paths
// see the same integers.
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>

#include "ops/kernel_table.h"

namespace qinfer::ops::detail {

namespace {
int64_t align64(int64_t b) { return (b + 63) / 64 * 64; }
}  // namespace

int64_t q4_input_bytes(const GptqMatrix& W, int64_t n) {
  return 3 * align64(n * W.padded_cols()) + 2 * align64(n * W.blocks() * 4);
}

Q4Input quantize_q4_input(const GptqMatrix& W, const float* X, int64_t n, unsigned char* mem) {
  constexpr int B = GptqMatrix::kBlock;
  const int64_t kp = W.padded_cols(), nb = W.blocks();
  Q4Input out;
  out.n = n;
  out.kp = kp;
  out.blocks = nb;
  auto take = [&](int64_t bytes) {
    unsigned char* p = mem;
    mem += align64(bytes);
    return p;
  };
  out.xh = reinterpret_cast<int8_t*>(take(n * kp));
  out.xm = reinterpret_cast<int8_t*>(take(n * kp));
  out.xl = reinterpret_cast<int8_t*>(take(n * kp));
  out.sx = reinterpret_cast<float*>(take(n * nb * 4));
  out.sxq = reinterpret_cast<float*>(take(n * nb * 4));
  std::vector<float> packed(W.identity_layout() ? 0 : kp);
  for (int64_t j = 0; j < n; ++j) {
    const float* x = X + j * W.cols();
    if (!W.identity_layout()) {
      W.gather_input(x, packed.data());
      x = packed.data();
    }
    int8_t* xh = out.xh + j * kp;
    int8_t* xm = out.xm + j * kp;
    int8_t* xl = out.xl + j * kp;
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = x + b * B;
      float m = 0;
      bool finite = true;
      for (int i = 0; i < B; ++i) {
        finite &= std::isfinite(xb[i]);
        m = std::max(m, std::fabs(xb[i]));
      }
      int32_t q[B] = {};
      float sx = 0;
      if (!finite) {
        sx = NAN;
      } else if (m > 0) {
        const float inv = static_cast<float>(kQ4Max) / m;
        sx = m / static_cast<float>(kQ4Max);
        for (int i = 0; i < B; ++i)
          // cvtss2si: round to nearest even like nearbyint, without a libm call per element
          q[i] = std::clamp(_mm_cvtss_si32(_mm_set_ss(xb[i] * inv)), -kQ4Max, kQ4Max);
      }
      int64_t sum = 0;
      for (int i = 0; i < B; ++i) {
        sum += q[i];
        xh[b * B + i] = static_cast<int8_t>(q[i] >> 14);         // floor(q / 2^14): -128..127
        xm[b * B + i] = static_cast<int8_t>((q[i] >> 7) & 127);  // 0..127
        xl[b * B + i] = static_cast<int8_t>(q[i] & 127);         // 0..127
      }
      out.sx[j * nb + b] = sx;
      out.sxq[j * nb + b] = static_cast<float>(sum);
    }
  }
  return out;
}

}  // namespace qinfer::ops::detail
