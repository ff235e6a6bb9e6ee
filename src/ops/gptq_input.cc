// Lays out the quantized activations of a GPTQ product for the integer kernels
// (see Q4Input in matmul_table.h): gather into packed column order, then the
// path's q4_quantize per row (every path's quantizer gives the same integers).
#include <algorithm>
#include <cmath>

#include "ops/matmul_table.h"
#include "util/thread_pool.h"

namespace qinfer::ops::detail {

namespace {
int64_t align64(int64_t b) { return (b + 63) / 64 * 64; }
}  // namespace

int64_t q4_input_bytes(const GptqMatrix& W, int64_t n) {
  return 3 * align64(n * W.padded_cols()) + 2 * align64(n * W.blocks() * 4);
}

Q4Input quantize_q4_input(const KernelTable& t, const GptqMatrix& W, const float* X, int64_t n,
                          unsigned char* mem) {
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
  // Rows in parallel where there are many (a prefill product on the integer kernel:
  // quantizing 512 rows on one thread left the other idle for a fifth of the product);
  // inside a parallel pass (matmul_batch's items) this runs inline. Each row alone: the
  // same bytes.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, kp));
  parallel_for(n, grain, [&](int64_t j0, int64_t j1, int) {
    std::vector<float> packed(W.identity_layout() ? 0 : kp);
    for (int64_t j = j0; j < j1; ++j) {
      const float* x = X + j * W.cols();
      if (!W.identity_layout()) {
        W.gather_input(x, packed.data());
        x = packed.data();
      }
      t.q4_quantize(x, nb, out.xh + j * kp, out.xm + j * kp, out.xl + j * kp, out.sx + j * nb, out.sxq + j * nb);
    }
  });
  return out;
}

}  // namespace qinfer::ops::detail
