// GPTQ int4 weights: the canonical form the loader hands over (one byte per code,
// float scales) and GptqMatrix, the repacked layout the kernels read.
//
// Packed layout: input columns are reordered so every group is one contiguous
// run (this undoes desc_act's g_idx permutation), each run is padded to a
// multiple of 32 columns, and each row stores its codes as 16 bytes per block of
// 32 columns: byte j holds column j in the low nibble and column j+16 in the
// high nibble. Padding codes equal the group's zero point, so they weigh 0.
// Per row and group: the scale (as fp16 bits when every scale is exactly an
// fp16 value, as checkpoints store them; else fp32) and the zero point (a byte).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace qinfer::ops {

// w[o][i] = scale[o][g(i)] * (q[o][i] - zero[o][g(i)]), q and zero in 0..15,
// g(i) = g_idx[i] (or i / group_size when g_idx is null).
// scale and zero hold ceil(cols / group_size) groups per row.
struct GptqCanonical {
  int64_t rows = 0;  // out features
  int64_t cols = 0;  // in features
  int group_size = 0;
  const uint8_t* q = nullptr;        // [rows][cols]
  const float* scale = nullptr;      // [rows][groups]
  const uint8_t* zero = nullptr;     // [rows][groups]
  const int32_t* g_idx = nullptr;    // [cols] or nullptr
};

class GptqMatrix {
 public:
  GptqMatrix() = default;
  GptqMatrix(const GptqMatrix&) = delete;   // the accessors point into its own storage
  GptqMatrix& operator=(const GptqMatrix&) = delete;
  static constexpr int kBlock = 32;  // columns per packed block (16 bytes)

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  // Bytes the kernels stream per product (codes + scales + zeros).
  int64_t bytes() const;

  // Packed columns (>= cols, multiple of kBlock) and groups.
  int64_t padded_cols() const { return kp_; }
  int64_t groups() const { return groups_; }
  // True when padded column p is source column p (no reordering, no padding);
  // otherwise activations go through gather_input first.
  bool identity_layout() const { return perm_.empty(); }
  // Xp[p] = X[perm[p]] (0 for padding): activations in packed column order.
  void gather_input(const float* x, float* xp) const;

  const uint8_t* row_codes(int64_t r) const { return codes_p_ + r * (kp_ / 2); }
  bool half_scales() const { return half_; }
  const uint16_t* row_scales_f16(int64_t r) const { return scale_h_p_ + r * groups_; }
  const float* row_scales_f32(int64_t r) const { return scale_f_p_ + r * groups_; }
  float scale(int64_t r, int64_t g) const;  // either storage
  const uint8_t* row_zeros(int64_t r) const { return zero_p_ + r * groups_; }

  // Moves the codes, scales and zeros into caller-owned memory `dst` (at least
  // bytes() + 192 bytes, 64-byte aligned, outliving this matrix; e.g. one
  // huge-page block for all experts) and frees the heap copies.
  void move_storage(unsigned char* dst);
  // Packed column range of group g: [group_begin(g), group_begin(g + 1)).
  int64_t group_begin(int64_t g) const { return gofs_[g]; }

 private:
  friend std::unique_ptr<GptqMatrix> gptq_pack(const GptqCanonical& c);
  void bind();   // points the accessors at the vectors below
  int64_t rows_ = 0, cols_ = 0, kp_ = 0, groups_ = 0;
  std::vector<int32_t> perm_;   // [kp] source column or -1; empty = identity
  std::vector<int64_t> gofs_;   // [groups + 1]
  std::vector<uint8_t> codes_;  // [rows][kp / 2]
  std::vector<uint16_t> scale_h_;  // [rows][groups] fp16 bits, or empty
  std::vector<float> scale_f_;     // [rows][groups] when scale_h_ is empty
  std::vector<uint8_t> zero_;      // [rows][groups]
  // What the kernels read: the vectors above, or memory given to move_storage.
  const uint8_t* codes_p_ = nullptr;
  const uint16_t* scale_h_p_ = nullptr;
  const float* scale_f_p_ = nullptr;
  const uint8_t* zero_p_ = nullptr;
  int64_t n_codes_ = 0, n_scale_h_ = 0, n_scale_f_ = 0, n_zero_ = 0;
  bool half_ = false;
};

// Validates c (throws qinfer::Error naming the field) and repacks it.
std::unique_ptr<GptqMatrix> gptq_pack(const GptqCanonical& c);

}  // namespace qinfer::ops
