#include "ops/gptq_pack.h"

#include <emmintrin.h>

#include <cmath>
#include <cstring>

#include "ops/kernel_table.h"
#include "util/error.h"

namespace qinfer::ops {

int64_t GptqMatrix::bytes() const { return n_codes_ + n_scale_h_ * 2 + n_scale_f_ * 4 + n_zero_; }

float GptqMatrix::scale(int64_t r, int64_t g) const {
  return half_scales() ? detail::f16_to_f32(scale_h_p_[r * groups_ + g]) : scale_f_p_[r * groups_ + g];
}

void GptqMatrix::bind() {
  codes_p_ = codes_.data();
  scale_h_p_ = scale_h_.data();
  scale_f_p_ = scale_f_.data();
  zero_p_ = zero_.data();
  n_codes_ = static_cast<int64_t>(codes_.size());
  n_scale_h_ = static_cast<int64_t>(scale_h_.size());
  n_scale_f_ = static_cast<int64_t>(scale_f_.size());
  n_zero_ = static_cast<int64_t>(zero_.size());
  half_ = !scale_h_.empty();
}

void GptqMatrix::move_storage(unsigned char* dst) {
  auto place = [&](const void* src, int64_t bytes) {
    unsigned char* at = dst;
    if (bytes > 0) std::memcpy(at, src, static_cast<size_t>(bytes));
    dst += (bytes + 63) / 64 * 64;
    return at;
  };
  codes_p_ = place(codes_p_, n_codes_);
  scale_h_p_ = reinterpret_cast<const uint16_t*>(place(scale_h_p_, n_scale_h_ * 2));
  scale_f_p_ = reinterpret_cast<const float*>(place(scale_f_p_, n_scale_f_ * 4));
  zero_p_ = place(zero_p_, n_zero_);
  std::vector<uint8_t>().swap(codes_);
  std::vector<uint16_t>().swap(scale_h_);
  std::vector<float>().swap(scale_f_);
  std::vector<uint8_t>().swap(zero_);
}

namespace {

// fp16 bits of f when f is exactly an fp16 value (checked by round trip).
bool f16_exact(float f, uint16_t* out) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const int e = static_cast<int>((u >> 23) & 0xff) - 127;
  const uint32_t mant = u & 0x7fffff;
  uint16_t h;
  if ((u & 0x7fffffff) == 0) {
    h = sign;
  } else if (e >= -14 && e <= 15) {
    h = static_cast<uint16_t>(sign | ((e + 15) << 10) | (mant >> 13));
  } else if (e >= -24 && e < -14) {  // fp16 subnormal: value = m * 2^-24
    h = static_cast<uint16_t>(sign | ((mant | 0x800000) >> (-1 - e)));
  } else {
    return false;
  }
  if (detail::f16_to_f32(h) != f) return false;
  *out = h;
  return true;
}

}  // namespace

void GptqMatrix::gather_input(const float* x, float* xp) const {
  if (perm_.empty()) {
    for (int64_t p = 0; p < kp_; ++p) xp[p] = x[p];
    return;
  }
  for (int64_t p = 0; p < kp_; ++p) xp[p] = perm_[p] < 0 ? 0.0f : x[perm_[p]];
}

std::unique_ptr<GptqMatrix> gptq_pack(const GptqCanonical& c) {
  if (c.rows <= 0 || c.cols <= 0) fail("gptq_pack: rows and cols must be positive (got ", c.rows, " x ", c.cols, ")");
  if (c.group_size <= 0) fail("gptq_pack: group_size must be positive (got ", c.group_size, ")");
  if (!c.q || !c.scale || !c.zero) fail("gptq_pack: q, scale and zero must be non-null");
  if (!c.g_idx && c.cols % c.group_size != 0)
    fail("gptq_pack: group_size ", c.group_size, " does not divide cols ", c.cols, " and there is no g_idx");
  constexpr int B = GptqMatrix::kBlock;
  const int64_t rows = c.rows, cols = c.cols;
  const int64_t groups = (cols + c.group_size - 1) / c.group_size;

  // Group of each source column, then columns bucketed by group (stable order).
  std::vector<int32_t> gcol(cols);
  for (int64_t i = 0; i < cols; ++i) {
    const int64_t g = c.g_idx ? c.g_idx[i] : i / c.group_size;
    if (g < 0 || g >= groups) fail("gptq_pack: g_idx[", i, "] = ", g, " is outside 0..", groups - 1);
    gcol[i] = static_cast<int32_t>(g);
  }
  std::vector<int64_t> count(groups, 0);
  for (int64_t i = 0; i < cols; ++i) ++count[gcol[i]];

  auto m = std::unique_ptr<GptqMatrix>(new GptqMatrix());
  m->rows_ = rows;
  m->cols_ = cols;
  m->groups_ = groups;
  m->gofs_.assign(groups + 1, 0);
  for (int64_t g = 0; g < groups; ++g) m->gofs_[g + 1] = m->gofs_[g] + (count[g] + B - 1) / B * B;
  const int64_t kp = m->gofs_[groups];
  m->kp_ = kp;

  std::vector<int32_t> perm(kp, -1);
  {
    std::vector<int64_t> fill(m->gofs_.begin(), m->gofs_.end() - 1);
    for (int64_t i = 0; i < cols; ++i) perm[fill[gcol[i]]++] = static_cast<int32_t>(i);
  }
  bool identity = kp == cols;
  for (int64_t p = 0; identity && p < kp; ++p) identity = perm[p] == p;
  // Group of each packed column (padding belongs to the group it pads).
  std::vector<int32_t> pgroup(kp);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t p = m->gofs_[g]; p < m->gofs_[g + 1]; ++p) pgroup[p] = static_cast<int32_t>(g);

  m->zero_.resize(rows * groups);
  m->scale_h_.resize(rows * groups);
  bool half = true;
  for (int64_t i = 0; i < rows * groups; ++i) {
    if (c.zero[i] > 15) fail("gptq_pack: zero[", i / groups, "][", i % groups, "] = ", int(c.zero[i]), " is not a 4-bit value");
    if (!std::isfinite(c.scale[i])) fail("gptq_pack: scale[", i / groups, "][", i % groups, "] is not finite");
    m->zero_[i] = c.zero[i];
    if (half) half = f16_exact(c.scale[i], &m->scale_h_[i]);
  }
  if (!half) {
    m->scale_h_ = {};
    m->scale_f_.assign(c.scale, c.scale + rows * groups);
  }

  m->codes_.resize(rows * (kp / 2));
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* q = c.q + r * cols;
    const uint8_t* z = m->zero_.data() + r * groups;
    uint8_t* out = m->codes_.data() + r * (kp / 2);
    uint8_t seen = 0;  // OR of all codes: > 15 means a bad one
    if (identity) {  // 16 + 16 codes -> 16 bytes, SSE2 (baseline x86-64)
      __m128i any = _mm_setzero_si128();
      for (int64_t b = 0; b < kp; b += B) {
        const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + b));
        const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + b + B / 2));
        any = _mm_or_si128(any, _mm_or_si128(lo, hi));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + b / 2), _mm_or_si128(lo, _mm_slli_epi16(hi, 4)));
      }
      if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(any, _mm_set1_epi8(static_cast<char>(0xf0))),
                                           _mm_setzero_si128())) != 0xffff)
        seen = 0xff;
    } else {
      auto code = [&](int64_t p) -> uint8_t {
        return perm[p] < 0 ? z[pgroup[p]] : q[perm[p]];
      };
      for (int64_t b = 0; b < kp; b += B)
        for (int i = 0; i < B / 2; ++i) {
          const uint8_t lo = code(b + i), hi = code(b + i + B / 2);
          seen |= lo | hi;
          out[b / 2 + i] = static_cast<uint8_t>(lo | (hi << 4));
        }
    }
    if (seen > 15) {
      for (int64_t i = 0; i < cols; ++i)
        if (q[i] > 15) fail("gptq_pack: q[", r, "][", i, "] = ", int(q[i]), " is not a 4-bit value");
    }
  }
  if (!identity) m->perm_ = std::move(perm);
  m->bind();
  return m;
}

}  // namespace qinfer::ops
