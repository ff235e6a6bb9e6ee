// conv_silu: argument checks, dispatch, and its scalar twin.
#include "ops/conv_silu.h"

#include "ops/norms_activations_rope.h"
#include "ops/seq_kernel_table.h"
#include "util/error.h"

namespace qinfer::ops {

namespace detail {
void conv_silu_scalar(const float* const* x, int64_t K, const float* w, int64_t conv_dim, int64_t c0, int64_t c1,
                      float* o) {
  for (int64_t c = c0; c < c1; ++c) {
    float acc = 0.0f;
    for (int64_t j = 0; j < K; ++j) acc += w[j * conv_dim + c] * x[j][c];
    o[c] = silu(acc);
  }
}
}  // namespace detail

void conv_silu(const float* const* x, int64_t K, const float* w, int64_t conv_dim, int64_t c0, int64_t c1, float* o) {
  if (K <= 0 || conv_dim <= 0) fail("conv_silu: kernel size ", K, " and conv_dim ", conv_dim, " must be positive");
  if (c0 < 0 || c1 > conv_dim || c0 > c1) fail("conv_silu: channel range [", c0, ", ", c1, ") outside [0, ", conv_dim, ")");
  if (!x || !w || !o) fail("conv_silu: null input, weight or output");
  detail::seq_kernels().conv_silu(x, K, w, conv_dim, c0, c1, o);
}

}  // namespace qinfer::ops
