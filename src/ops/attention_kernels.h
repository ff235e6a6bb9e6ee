// Causal GQA softmax attention over a key/value cache, flash style: online
// softmax over blocks of keys, each key row shared by the query heads of its kv
// group, and for decode (few query rows, long context) the keys of one group
// split over threads with the partial results merged afterwards
// (flash-decoding). Plain pointers and strides only; runtime dispatch picks the
// AVX-512 / AVX2 / scalar implementation with ops::kernel_path().
// Multi-threaded (qinfer::parallel_for): do not call from a parallel_for body.
#pragma once
#include <cstddef>
#include <cstdint>

namespace qinfer::ops {

// Rows stored in fixed-size blocks: kv head g of row r starts at
// blocks[r / block_rows] + g * head_stride + (r % block_rows) * row_stride. Rows
// holding every head side by side: head_stride = head_dim, row_stride >= kv_heads *
// head_dim; head-major blocks (each head's rows contiguous, as the model's KvCache
// keeps them: one stream per head at decode): row_stride = head_dim, head_stride >=
// block_rows * head_dim. One contiguous array is blocks = &base with block_rows >= the
// row count.
struct KvRows {
  const float* const* blocks = nullptr;
  int64_t block_rows = 0, row_stride = 0, head_stride = 0;
  const float* at(int64_t r, int64_t g) const {
    return blocks[r / block_rows] + g * head_stride + (r % block_rows) * row_stride;
  }
};

// Head layout shared by every sequence of a call. Query row t, head h lives at
// q + t*q_stride + h*head_dim (the output likewise at out + t*out_stride + ...);
// key/value row p of kv head g at k.at(p, g). Query head h uses kv
// head h / (heads / kv_heads).
struct AttentionShape {
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  int64_t q_stride = 0, out_stride = 0;
  float scale = 1.0f;   // score = scale * q·k
};

// One sequence: `rows` query tokens; token t attends to keys [0, pos[t]] (causal),
// so k and v must hold at least max(pos) + 1 rows.
struct AttentionSeq {
  const float* q = nullptr;
  float* out = nullptr;
  const int64_t* pos = nullptr;
  int64_t rows = 0;
  KvRows k, v;
};

struct AttentionOptions {
  // Key ranges per (query tile, kv group), merged afterwards: 0 = automatic (split
  // only when the tiles cannot keep the threads busy, at least 512 keys a range),
  // 1 = no split-K, n > 1 = n ranges of whole 64-key blocks (fewer for short contexts).
  int64_t max_splits = 0;
  int64_t tile_rows = 16;   // query tokens per task
  // Long prefill: a sequence whose query items (rows x heads of a kv group) fill
  // at least two tiles of pack_items gets its keys and values copied once into
  // head-contiguous blocks (keys transposed) and is worked in tiles of about
  // pack_items items (pack_items / group rows, at least 1) with register-blocked
  // q kᵀ and p·V kernels. pack: 0 = automatic, 1 = never, 2 = every sequence.
  int64_t pack = 0;
  int64_t pack_items = 96;
};

// out = softmax(scale * q kᵀ) v per query head, for every sequence.
// Throws qinfer::Error on a bad shape or missing pointers.
void attention(const AttentionShape& shape, const AttentionSeq* seqs, size_t n_seqs, const AttentionOptions& opt = {});

}  // namespace qinfer::ops
