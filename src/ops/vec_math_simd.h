// Internal: vectorised exp on the vector traits V of the including per-ISA file
// (seq_kernels_avx512.cc / seq_kernels_avx2.cc), inside its anonymous namespace.
// Not include-guarded on purpose (one inclusion per ISA file).
//
// Cephes-style expf: n = round(x / ln2), r = x - n ln2 (ln2 in two parts, FMA),
// e^r by a degree-6 polynomial on |r| <= ln2/2, times 2^n built in the exponent
// bits. Inputs clamp to [-88.37, 88.37] (so 2^n stays a normal float); below
// ln(FLT_MIN) = -87.3365 the result is 0, which also covers -inf. min/max take
// x as the second operand so a NaN passes through to the result.

inline V::T exp_v(V::T x) {
  using T = V::T;
  const T xc = V::max(V::set1(-88.37f), V::min(V::set1(88.37f), x));
  const T n = V::round(V::mul(xc, V::set1(1.44269504088896341f)));
  T r = V::fma(n, V::set1(-0.693359375f), xc);
  r = V::fma(n, V::set1(2.12194440e-4f), r);
  T p = V::set1(1.9875691500e-4f);
  p = V::fma(p, r, V::set1(1.3981999507e-3f));
  p = V::fma(p, r, V::set1(8.3334519073e-3f));
  p = V::fma(p, r, V::set1(4.1665795894e-2f));
  p = V::fma(p, r, V::set1(1.6666665459e-1f));
  p = V::fma(p, r, V::set1(5.0000001201e-1f));
  p = V::fma(p, V::mul(r, r), V::add(r, V::set1(1.0f)));
  return V::zero_where_less(x, V::set1(-87.336544f), V::mul(p, V::pow2n(n)));
}

// silu(x) = x / (1 + e^-x)
inline V::T silu_v(V::T x) {
  return V::div(x, V::add(V::set1(1.0f), exp_v(V::sub(V::zero(), x))));
}

void vexp_simd(const float* x, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(y + i, exp_v(V::load(x + i)));
  if (i < n) {
    alignas(64) float buf[V::W] = {};
    for (int64_t j = i; j < n; ++j) buf[j - i] = x[j];
    V::store(buf, exp_v(V::load(buf)));
    for (int64_t j = i; j < n; ++j) y[j] = buf[j - i];
  }
}
