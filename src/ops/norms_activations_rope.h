// Plain fp32 element-wise and normalisation helpers used by the model forward
// pass: RMSNorm variants, L2 norm, activations, softmax, rotary embedding.
// Scalar C++ with simple loops the compiler can vectorise; every function works
// on one row (or n rows laid out contiguously) and never allocates.
#pragma once
#include <cmath>
#include <cstdint>

namespace qinfer::ops {

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
// PyTorch's softplus (beta 1, threshold 20): x itself above 20, else log(1 + e^x).
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// y[i] = x[i] / rms(x) * w[i] over one row of n values; rms = sqrt(mean(x²) + eps).
// For the zero-centred norms of Qwen3.5 pass w = 1 + stored weight (see add_one).
// y may alias x.
void rmsnorm(const float* x, const float* w, int64_t n, float eps, float* y);
// The same over `rows` contiguous rows of n values.
void rmsnorm_rows(const float* x, const float* w, int64_t rows, int64_t n, float eps, float* y);
// Zero-centred RMSNorm: y = x / rms(x) * (1 + w).
void rmsnorm_zc(const float* x, const float* w, int64_t n, float eps, float* y);
// Gated RMSNorm of the DeltaNet output: y = x / rms(x) * w * silu(z). y may alias x.
void rmsnorm_gated(const float* x, const float* z, const float* w, int64_t n, float eps, float* y);
// L2 normalisation: y = x / sqrt(sum(x²) + eps) * scale. y may alias x.
void l2norm(const float* x, int64_t n, float eps, float scale, float* y);

// In-place softmax over n values (max-subtracted, fp32).
void softmax(float* x, int64_t n);

// out[i] = silu(gate[i]) * up[i] (SwiGLU). out may alias gate or up.
void swiglu(const float* gate, const float* up, int64_t n, float* out);

// y[i] += a * x[i]   (inline: the delta rule and attention call it per row)
inline void axpy(float a, const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}
// sum x[i]*y[i] (fp32, eight partial sums so the loop vectorises without -ffast-math)
inline float dot(const float* x, const float* y, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += x[i + k] * y[i + k];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}

// w[i] = 1 + w[i] (turns a zero-centred norm weight into a plain scale).
void add_one(float* w, int64_t n);

// Rotary embedding, rotate-half (NeoX) pairing over the first rotary_dim values of
// one head: for f < rotary_dim/2, (x[f], x[f+half]) is rotated by angle
// pos_f * inv_freq[f]. cos/sin hold the rotary_dim/2 per-frequency values.
// The remaining head_dim - rotary_dim values are untouched.
void rope_rotate_half(float* x, const float* cos, const float* sin, int64_t rotary_dim);

// Per-frequency angles for one token with interleaved multimodal RoPE
// (mrope_interleaved): frequency f takes the height position when f % 3 == 1 and
// f < 3*section[1], the width position when f % 3 == 2 and f < 3*section[2], the
// temporal position otherwise. For text pos_t == pos_h == pos_w (plain RoPE).
// inv_freq[f] = 1 / theta^(2f / rotary_dim), computed in fp32 as the reference does.
void rope_inv_freq(double theta, int64_t rotary_dim, float* inv_freq);
void mrope_cos_sin(const int64_t pos[3], const float* inv_freq, int64_t half,
                   const int* section, int n_section, float* cos, float* sin);

}  // namespace qinfer::ops
