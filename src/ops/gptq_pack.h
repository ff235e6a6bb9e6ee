// GPTQ int4 weights: the canonical form the loader hands over (one byte per code,
// float scales) and GptqMatrix, the repacked layout the kernels read.
//
// Packed layout ("row tiles"): input columns are reordered so every group is one
// contiguous run (this undoes desc_act's g_idx permutation) and each run is
// padded to a multiple of 32 columns; padding codes equal the group's zero
// point, so they weigh 0. Rows are cut into tiles of 16 (the last one padded
// with zero rows). A tile stores, per block of 32 packed columns, 256 bytes:
// four 64-byte chunks, chunk c covering columns 8c..8c+7 of the block. Byte
// 4l + e of a chunk holds row l's column 8c+e in its low nibble and column
// 8c+4+e in its high nibble (l < 16, e < 4), so one vector load gives every
// row of the tile four consecutive columns per 32-bit lane: the shape of the
// VNNI byte dot product (vpdpbusd), one output row per lane.
// Per tile and group: the 16 rows' scales (fp16 bits when every scale is
// exactly an fp16 value, as checkpoints store them; else fp32), then the 16
// zero points (bytes).
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
  static constexpr int kBlock = 32;      // columns per packed block
  static constexpr int kTileRows = 16;   // rows per tile
  static constexpr int kTileBlockBytes = kBlock * kTileRows / 2;  // 256

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  // Bytes the kernels stream per product (codes + scales + zeros, if stored).
  int64_t bytes() const;

  // Packed columns (>= cols, multiple of kBlock) and groups.
  int64_t padded_cols() const { return kp_; }
  int64_t groups() const { return groups_; }
  // True when padded column p is source column p (no reordering, no padding);
  // otherwise activations go through gather_input first.
  bool identity_layout() const { return perm_.empty(); }
  // Xp[p] = X[perm[p]] (0 for padding): activations in packed column order.
  void gather_input(const float* x, float* xp) const;

  int64_t tiles() const { return (rows_ + kTileRows - 1) / kTileRows; }
  int64_t blocks() const { return kp_ / kBlock; }
  // Tile t's codes: blocks() blocks of kTileBlockBytes, in packed column order.
  const uint8_t* tile_codes(int64_t t) const { return codes_p_ + t * blocks() * kTileBlockBytes; }
  bool half_scales() const { return half_; }
  // Tile t, group g: kTileRows scales and kTileRows zero points.
  const uint16_t* tile_scales_f16(int64_t t, int64_t g) const { return scale_h_p_ + (t * groups_ + g) * kTileRows; }
  const float* tile_scales_f32(int64_t t, int64_t g) const { return scale_f_p_ + (t * groups_ + g) * kTileRows; }
  // The zero point every (row, group) shares (symmetric GPTQ: 8), or -1; when
  // there is one, no zeros are stored and tile_zeros must not be called.
  int uniform_zero() const { return uzero_; }
  const uint8_t* tile_zeros(int64_t t, int64_t g) const { return zero_p_ + (t * groups_ + g) * kTileRows; }
  float scale(int64_t r, int64_t g) const;  // either storage
  int zero(int64_t r, int64_t g) const {
    return uzero_ >= 0 ? uzero_ : tile_zeros(r / kTileRows, g)[r % kTileRows];
  }
  // The 4-bit code of row r at packed column p (scalar access, for the
  // reference kernel and tests).
  int code(int64_t r, int64_t p) const;

  // Moves the codes, scales and zeros into caller-owned memory `dst` (at least
  // storage_bytes(), 64-byte aligned, outliving this matrix; e.g. one
  // huge-page block for all experts) and frees the heap copies.
  void move_storage(unsigned char* dst);
  // What move_storage needs at dst: bytes() with each of its parts rounded up to 64.
  int64_t storage_bytes() const;
  // Packed column range of group g: [group_begin(g), group_begin(g + 1)).
  int64_t group_begin(int64_t g) const { return gofs_[g]; }
  // Group of packed block b.
  int64_t block_group(int64_t b) const { return bgroup_[b]; }

 private:
  friend std::unique_ptr<GptqMatrix> gptq_pack(const GptqCanonical& c);
  friend std::unique_ptr<GptqMatrix> gptq_probe_matrix(int64_t rows, int64_t cols);
  void bind();   // points the accessors at the vectors below
  int64_t rows_ = 0, cols_ = 0, kp_ = 0, groups_ = 0;
  std::vector<int32_t> perm_;   // [kp] source column or -1; empty = identity
  std::vector<int64_t> gofs_;   // [groups + 1]
  std::vector<int32_t> bgroup_; // [kp / kBlock] group of each block
  std::vector<uint8_t> codes_;  // [tiles][blocks][kTileBlockBytes]
  std::vector<uint16_t> scale_h_;  // [tiles][groups][kTileRows] fp16 bits, or empty
  std::vector<float> scale_f_;     // [tiles][groups][kTileRows] when scale_h_ is empty
  std::vector<uint8_t> zero_;      // [tiles][groups][kTileRows], empty when uzero_ >= 0
  int uzero_ = -1;
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
// A symmetric group-32 matrix (fp16 scales 2^-7, zero point 8, identity layout) with
// patterned codes, filled in O(bytes) without a canonical input: the weights of a
// kernel probe (ops/dispatch.cc). rows % 16 == 0, cols % 32 == 0.
std::unique_ptr<GptqMatrix> gptq_probe_matrix(int64_t rows, int64_t cols);

}  // namespace qinfer::ops
