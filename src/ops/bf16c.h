// BF16C: a lossless 12-bit form of a BF16 weight matrix, for decode. Decode of
// the dense weights is a memory stream (every weight read once per token), so a
// quarter fewer bytes is up to a third more speed where one core decodes faster
// than memory delivers (AMD Zen 4: 1.3-1.7x the plain BF16 kernel on the 1 GB
// lm_head, docs/PERFORMANCE.md); the values, and the products, are unchanged.
//
// A bf16 value is a high byte (sign + the top 7 exponent bits) and a low byte (the
// last exponent bit + 7 mantissa bits). Trained (and synthetic) weights use few
// exponents: the 16 most frequent high bytes of a matrix cover ~99.99% of its
// values. Each row of K = cols weights (K % 64 == 0) is stored as K / 64 blocks of
// 96 bytes, one after another (one sequential stream: the same blocks split into a
// row's low bytes then its index bytes, two streams, decoded 3x slower from memory
// on AMD Zen 4):
//   block b = [64 low bytes][32 index bytes]
// Its low bytes hold column 64 b + 16 g + 4 q + m at byte 16 q + 4 g + m (q, g, m
// < 4: bf16c_column), so that byte-interleaving the low and high bytes within each
// 16-byte lane (vpunpck{l,h}bw) and then each word with a zero word (vpunpck{l,h}wd)
// gives the plain kernel's fp32 vectors in its lanes: 16 columns each on AVX-512, 8
// on AVX2; its index bytes hold the 4-bit table index of byte position i (0..31) in
// the low nibble of byte i and that of position i + 32 in the high nibble. A block
// holding a high byte outside the table is an escape: its 64 bf16 values are kept as
// they are, in column order, in `raw` (its slot in the stream is unused), listed per
// row in ascending block order. 96 bytes per 64 weights: 0.75 of BF16, plus the
// escapes (~0.5% of blocks
// on N(0, 0.02) weights).
//
// Every kernel computes, per row, the same fp32 operations in the same order as the
// plain BF16 kernel of the same shape, so products are bit-identical to BF16's.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace qinfer::ops {

struct DenseMatrix;

// The parts of a BF16C matrix beside its stream (DenseMatrix::weights()).
struct Bf16cAux {
  uint8_t table[16] = {};            // high byte of each index
  std::vector<uint32_t> esc_start;   // [rows + 1]: row r's escapes are [esc_start[r], esc_start[r + 1])
  std::vector<uint32_t> esc_block;   // block index of each escape
  std::vector<uint16_t> raw;         // 64 bf16 values per escape, column order
  int64_t bytes() const {
    return static_cast<int64_t>(sizeof(table) + esc_start.size() * 4 + esc_block.size() * 4 + raw.size() * 2);
  }
};

constexpr int64_t kBf16cBlock = 64;
constexpr int64_t kBf16cBlockBytes = 96;
// The column (within its block) of the value at byte position p (< 64) of a block.
constexpr int bf16c_column(int p) { return 16 * ((p / 4) % 4) + 4 * (p / 16) + p % 4; }

// Stream bytes of a rows x cols matrix (cols % 64 == 0).
inline int64_t bf16c_stream_bytes(int64_t rows, int64_t cols) { return rows * (cols / kBf16cBlock) * kBf16cBlockBytes; }

// A table chosen from a sample of the rows (a bounded read: the whole matrix is read
// once, by the encoder), with the share of blocks the sample found escaping.
struct Bf16cTable {
  uint8_t table[16] = {};
  double escape_share = 0;   // of the sampled blocks
};
// src: BF16, cols % 64 == 0 (Error otherwise).
Bf16cTable bf16c_table(const DenseMatrix& src);
// Encodes src (BF16) with `table`. dst (optional, bf16c_stream_bytes): the stream is
// written there (caller-owned memory, e.g. the resident weights), else into `owned`.
// rows_done (optional) is called, from any thread, once source rows [r0, r1) are read.
DenseMatrix dense_to_bf16c(const DenseMatrix& src, const Bf16cTable& table,
                           const std::function<void(int64_t, int64_t)>& rows_done = nullptr, uint8_t* dst = nullptr);
// Whether a matrix can take the form (BF16, cols a multiple of 64).
bool bf16c_encodable(const DenseMatrix& m);

namespace detail {
// Block b of row r of a BF16C stream decoded to 64 bf16 values in column order
// (escapes included): the scalar twin every SIMD decoder is tested against.
void bf16c_decode_block(const DenseMatrix& W, int64_t r, int64_t b, uint16_t* out);
// Row r decoded to K bf16 values.
void bf16c_decode_row(const DenseMatrix& W, int64_t r, uint16_t* out);
}  // namespace detail

}  // namespace qinfer::ops
