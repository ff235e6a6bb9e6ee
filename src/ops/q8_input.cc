// The activation quantizer of the integer int8 dense product (Q8Input in
// ops/matmul_table.h): one scalar routine shared by every kernel path.
#include <immintrin.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "ops/matmul_table.h"

namespace qinfer::ops::detail {

namespace {
int64_t q8_kp(int64_t k) { return (k + 63) / 64 * 64; }
int64_t q8_ld(int64_t k) { return q8_kp(k) / 64 % 2 ? q8_kp(k) : q8_kp(k) + 64; }
int64_t align64(int64_t b) { return (b + 63) / 64 * 64; }
}  // namespace

int64_t q8_input_bytes(int64_t k, int64_t n) {
  return 2 * align64(n * q8_ld(k)) + align64(n * int64_t{sizeof(float)}) + align64(n * int64_t{sizeof(int64_t)});
}

Q8Input quantize_q8_input(const float* X, int64_t n, int64_t k, unsigned char* mem) {
  Q8Input q;
  q.n = n;
  q.k = k;
  q.kp = q8_kp(k);
  q.ld = q8_ld(k);
  const int64_t part = align64(n * q.ld);
  q.h = reinterpret_cast<int8_t*>(mem);
  q.l = reinterpret_cast<int8_t*>(mem + part);
  q.sx = reinterpret_cast<float*>(mem + 2 * part);
  q.sxq = reinterpret_cast<int64_t*>(mem + 2 * part + align64(n * int64_t{sizeof(float)}));
  std::memset(mem, 0, static_cast<size_t>(2 * part));
  for (int64_t j = 0; j < n; ++j) {
    const float* x = X + j * k;
    float m = 0;
    bool finite = true;
    for (int64_t i = 0; i < k; ++i) {
      const float v = std::fabs(x[i]);
      if (!(v <= FLT_MAX)) finite = false;   // NaN and infinities fail it
      else m = std::max(m, v);
    }
    int8_t* h = q.h + j * q.ld;
    int8_t* l = q.l + j * q.ld;
    const float inv = m > 0 ? static_cast<float>(kQ8Max) / m : 0.0f;
    float s = 0;
    if (!finite) s = NAN;
    else if (m > 0 && inv <= FLT_MAX) s = m / static_cast<float>(kQ8Max);
    int64_t sum = 0;
    for (int64_t i = 0; i < k; ++i) {
      // cvtss2si rounds to nearest even (the default mode). xq = 0 where s is 0 or NaN.
      const int32_t xq = s > 0 ? std::clamp(_mm_cvtss_si32(_mm_set_ss(x[i] * inv)), -kQ8Max, kQ8Max) : 0;
      sum += xq;
      h[i] = static_cast<int8_t>(xq >> 7);     // floor(xq / 2^7): -128..127
      l[i] = static_cast<int8_t>(xq & 127);    // 0..127
    }
    q.sx[j] = s;
    q.sxq[j] = sum;
  }
  return q;
}

}  // namespace qinfer::ops::detail
