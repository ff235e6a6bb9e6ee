// Internal: one token of the causal depthwise conv + SiLU on the vector traits V
// of the including per-ISA file (inside its anonymous namespace); needs silu_v
// from vec_math_simd.h. Not include-guarded on purpose.

void conv_silu_simd(const float* const* x, int64_t K, const float* w, int64_t conv_dim, int64_t c0, int64_t c1,
                    float* o) {
  int64_t c = c0;
  for (; c + V::W <= c1; c += V::W) {
    V::T acc = V::zero();
    for (int64_t j = 0; j < K; ++j) acc = V::fma(V::load(w + j * conv_dim + c), V::load(x[j] + c), acc);
    V::store(o + c, silu_v(acc));
  }
  if (c < c1) {   // the last channels through a zero-padded vector
    alignas(64) float buf[V::W] = {};
    V::T acc = V::zero();
    for (int64_t j = 0; j < K; ++j) {
      for (int64_t e = c; e < c1; ++e) buf[e - c] = x[j][e];
      const V::T xv = V::load(buf);
      for (int64_t e = c; e < c1; ++e) buf[e - c] = w[j * conv_dim + e];
      acc = V::fma(V::load(buf), xv, acc);
    }
    V::store(buf, silu_v(acc));
    for (int64_t e = c; e < c1; ++e) o[e] = buf[e - c];
  }
}
