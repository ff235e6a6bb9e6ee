// Vectorised elementwise math with runtime dispatch (ops::kernel_path()).
#pragma once
#include <cstdint>

namespace qinfer::ops {

// y[i] = e^x[i] for i < n (y may alias x). SIMD paths: a degree-6 polynomial on
// the reduced argument and the exponent set through the float bits; within a few
// ulp of std::exp for x in [-87.3, 88.37], exactly 0 below (including -inf),
// NaN stays NaN; inputs above 88.37 are clamped (the softmax never sees them).
void vexp(const float* x, int64_t n, float* y);

}  // namespace qinfer::ops
