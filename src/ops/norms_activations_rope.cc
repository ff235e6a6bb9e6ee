#include "ops/norms_activations_rope.h"

#include <algorithm>

namespace qinfer::ops {

namespace {
float sum_squares(const float* x, int64_t n) { return dot(x, x, n); }
}  // namespace

void rmsnorm(const float* x, const float* w, int64_t n, float eps, float* y) {
  const float r = 1.0f / std::sqrt(sum_squares(x, n) / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * r * w[i];
}

void rmsnorm_rows(const float* x, const float* w, int64_t rows, int64_t n, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) rmsnorm(x + r * n, w, n, eps, y + r * n);
}

void rmsnorm_zc(const float* x, const float* w, int64_t n, float eps, float* y) {
  const float r = 1.0f / std::sqrt(sum_squares(x, n) / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * r * (1.0f + w[i]);
}

void rmsnorm_gated(const float* x, const float* z, const float* w, int64_t n, float eps, float* y) {
  const float r = 1.0f / std::sqrt(sum_squares(x, n) / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * r * w[i] * silu(z[i]);
}

void l2norm(const float* x, int64_t n, float eps, float scale, float* y) {
  const float r = scale / std::sqrt(sum_squares(x, n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * r;
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float m = x[0];
  for (int64_t i = 1; i < n; ++i) m = std::max(m, x[i]);
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    s += x[i];
  }
  const float inv = 1.0f / s;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void swiglu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = silu(gate[i]) * up[i];
}

void add_one(float* w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) w[i] += 1.0f;
}

void rope_rotate_half(float* x, const float* cos, const float* sin, int64_t rotary_dim) {
  const int64_t half = rotary_dim / 2;
  for (int64_t f = 0; f < half; ++f) {
    const float a = x[f], b = x[f + half];
    x[f] = a * cos[f] - b * sin[f];
    x[f + half] = b * cos[f] + a * sin[f];
  }
}

void rope_inv_freq(double theta, int64_t rotary_dim, float* inv_freq) {
  const float base = static_cast<float>(theta);
  for (int64_t f = 0; f < rotary_dim / 2; ++f) {
    const float e = static_cast<float>(2 * f) / static_cast<float>(rotary_dim);
    inv_freq[f] = 1.0f / std::pow(base, e);
  }
}

void mrope_cos_sin(const int64_t pos[3], const float* inv_freq, int64_t half,
                   const int* section, int n_section, float* cos, float* sin) {
  const int64_t lim_h = n_section > 1 ? 3 * static_cast<int64_t>(section[1]) : 0;
  const int64_t lim_w = n_section > 2 ? 3 * static_cast<int64_t>(section[2]) : 0;
  for (int64_t f = 0; f < half; ++f) {
    int64_t p = pos[0];
    if (f % 3 == 1 && f < lim_h) p = pos[1];
    else if (f % 3 == 2 && f < lim_w) p = pos[2];
    const float ang = static_cast<float>(p) * inv_freq[f];
    cos[f] = std::cos(ang);
    sin[f] = std::sin(ang);
  }
}

}  // namespace qinfer::ops
