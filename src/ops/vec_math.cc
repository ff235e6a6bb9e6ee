// vexp: dispatch, and its scalar twin (std::exp).
#include "ops/vec_math.h"

#include <cmath>

#include "ops/seq_kernel_table.h"
#include "util/error.h"

namespace qinfer::ops {

namespace detail {
void vexp_scalar(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}
}  // namespace detail

void vexp(const float* x, int64_t n, float* y) {
  if (n < 0) fail("vexp: negative length ", n);
  if (n > 0 && (!x || !y)) fail("vexp: null input or output");
  detail::seq_kernels().vexp(x, n, y);
}

}  // namespace qinfer::ops
