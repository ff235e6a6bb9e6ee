// One token of the causal depthwise convolution of a Gated DeltaNet layer,
// followed by SiLU, for a range of channels. Single-threaded; runtime dispatch
// with ops::kernel_path().
#pragma once
#include <cstdint>

namespace qinfer::ops {

// o[c] = silu(Σ_j w[j*conv_dim + c] * x[j][c]) for c in [c0, c1): x holds the K
// input rows (oldest first) ending at this token, w is [K][conv_dim].
void conv_silu(const float* const* x, int64_t K, const float* w, int64_t conv_dim, int64_t c0, int64_t c1, float* o);

}  // namespace qinfer::ops
