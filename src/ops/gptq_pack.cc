#include "ops/gptq_pack.h"

#include <cmath>
#include <cstring>

#include "ops/matmul_table.h"
#include "util/error.h"

namespace qinfer::ops {

int64_t GptqMatrix::bytes() const { return n_codes_ + n_scale_h_ * 2 + n_scale_f_ * 4 + n_zero_; }

float GptqMatrix::scale(int64_t r, int64_t g) const {
  const int64_t t = r / kTileRows, l = r % kTileRows;
  return half_scales() ? detail::f16_to_f32(tile_scales_f16(t, g)[l]) : tile_scales_f32(t, g)[l];
}

int GptqMatrix::code(int64_t r, int64_t p) const {
  const int64_t b = p / kBlock, i = p % kBlock, ch = i / 8, e = i % 8;
  const uint8_t byte = tile_codes(r / kTileRows)[b * kTileBlockBytes + 64 * ch + 4 * (r % kTileRows) + e % 4];
  return e < 4 ? byte & 15 : byte >> 4;
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

namespace {
int64_t round64(int64_t n) { return (n + 63) / 64 * 64; }
}  // namespace

int64_t GptqMatrix::storage_bytes() const {
  return round64(n_codes_) + round64(n_scale_h_ * 2) + round64(n_scale_f_ * 4) + round64(n_zero_);
}

void GptqMatrix::move_storage(unsigned char* dst) {
  auto place = [&](const void* src, int64_t bytes) {
    unsigned char* at = dst;
    if (bytes > 0) std::memcpy(at, src, static_cast<size_t>(bytes));
    dst += round64(bytes);
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

std::unique_ptr<GptqMatrix> gptq_probe_matrix(int64_t rows, int64_t cols) {
  constexpr int B = GptqMatrix::kBlock, TR = GptqMatrix::kTileRows;
  if (rows <= 0 || cols <= 0 || rows % TR != 0 || cols % B != 0)
    fail("gptq_probe_matrix: ", rows, " x ", cols, " is not whole 16-row tiles of 32-column blocks");
  auto m = std::unique_ptr<GptqMatrix>(new GptqMatrix());
  const int64_t groups = cols / B, tiles = rows / TR;
  m->rows_ = rows;
  m->cols_ = cols;
  m->kp_ = cols;
  m->groups_ = groups;
  m->gofs_.resize(groups + 1);
  for (int64_t g = 0; g <= groups; ++g) m->gofs_[g] = g * B;
  m->bgroup_.resize(groups);
  for (int64_t b = 0; b < groups; ++b) m->bgroup_[b] = static_cast<int32_t>(b);
  m->codes_.resize(static_cast<size_t>(tiles * groups * GptqMatrix::kTileBlockBytes));
  for (size_t i = 0; i < m->codes_.size(); ++i) m->codes_[i] = static_cast<uint8_t>((i * 40503u) >> 7);
  m->scale_h_.assign(static_cast<size_t>(tiles * groups * TR), 0x2000);   // fp16 2^-7
  m->uzero_ = 8;
  m->bind();
  return m;
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

  // Scales and zero points, [tiles][groups][kTileRows]; padding rows stay 0.
  constexpr int TR = GptqMatrix::kTileRows;
  const int64_t tiles = (rows + TR - 1) / TR, nblocks = kp / B;
  auto pidx = [&](int64_t r, int64_t g) { return ((r / TR) * groups + g) * TR + r % TR; };
  m->zero_.assign(tiles * groups * TR, 0);
  m->scale_h_.assign(tiles * groups * TR, 0);
  bool half = true;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t i = r * groups + g;
      if (c.zero[i] > 15) fail("gptq_pack: zero[", r, "][", g, "] = ", int(c.zero[i]), " is not a 4-bit value");
      if (!std::isfinite(c.scale[i])) fail("gptq_pack: scale[", r, "][", g, "] is not finite");
      m->zero_[pidx(r, g)] = c.zero[i];
      if (half) half = f16_exact(c.scale[i], &m->scale_h_[pidx(r, g)]);
    }
  // One zero point for all (symmetric quantization): not stored, not read.
  bool uniform = rows > 0 && groups > 0;
  for (int64_t i = 1; uniform && i < rows * groups; ++i) uniform = c.zero[i] == c.zero[0];
  if (uniform) {
    m->uzero_ = c.zero[0];
    m->zero_ = {};
  }
  if (!half) {
    m->scale_h_ = {};
    m->scale_f_.assign(tiles * groups * TR, 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < groups; ++g) m->scale_f_[pidx(r, g)] = c.scale[r * groups + g];
  }
  m->bgroup_.resize(nblocks);
  for (int64_t b = 0; b < nblocks; ++b) m->bgroup_[b] = pgroup[b * B];

  // Codes: per row, in packed column order, then 8 columns at a time into the
  // row's 32-bit lane of each chunk (low nibbles columns 8c..8c+3, high 8c+4..8c+7).
  m->codes_.assign(tiles * nblocks * GptqMatrix::kTileBlockBytes, 0);
  std::vector<uint8_t> prow(identity ? 0 : kp);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* q = c.q + r * cols;
    const uint8_t* src = q;
    if (!identity) {
      for (int64_t p = 0; p < kp; ++p)
        prow[p] = perm[p] < 0 ? c.zero[r * groups + pgroup[p]] : q[perm[p]];
      src = prow.data();
    }
    uint8_t* tile = m->codes_.data() + (r / TR) * nblocks * GptqMatrix::kTileBlockBytes + 4 * (r % TR);
    uint32_t seen = 0;  // OR of all code bytes: a bit above the nibble means a bad code
    for (int64_t b = 0; b < nblocks; ++b)
      for (int ch = 0; ch < 4; ++ch) {
        uint32_t lo, hi;
        std::memcpy(&lo, src + b * B + 8 * ch, 4);
        std::memcpy(&hi, src + b * B + 8 * ch + 4, 4);
        seen |= lo | hi;
        const uint32_t word = lo | (hi << 4);  // bytes <= 15: no carry between bytes
        std::memcpy(tile + b * GptqMatrix::kTileBlockBytes + 64 * ch, &word, 4);
      }
    if (seen & 0xf0f0f0f0u) {
      for (int64_t i = 0; i < cols; ++i)
        if (q[i] > 15) fail("gptq_pack: q[", r, "][", i, "] = ", int(q[i]), " is not a 4-bit value");
    }
  }
  if (!identity) m->perm_ = std::move(perm);
  m->bind();
  return m;
}

}  // namespace qinfer::ops
