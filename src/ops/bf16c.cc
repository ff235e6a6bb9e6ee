// The BF16C encoder and its scalar decoder (format: ops/bf16c.h).
#include "ops/bf16c.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>

#include "ops/matmul.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace qinfer::ops {

namespace {

void check_source(const DenseMatrix& src, const char* what) {
  if (src.type != WType::BF16) fail(what, ": the source must be BF16 (got ", wtype_name(src.type), ")");
  if (src.rows <= 0 || src.cols <= 0 || !src.weights()) fail(what, ": weight matrix has no shape or data");
  if (src.cols % kBf16cBlock != 0)
    fail(what, ": ", src.cols, " columns is not a multiple of ", kBf16cBlock, " (the form's block)");
}

// Rows per encoding chunk (a parallel_for grain).
constexpr int64_t kChunkRows = 64;

}  // namespace

bool bf16c_encodable(const DenseMatrix& m) {
  return m.type == WType::BF16 && m.rows > 0 && m.cols > 0 && m.cols % kBf16cBlock == 0 && m.weights();
}

Bf16cTable bf16c_table(const DenseMatrix& src) {
  check_source(src, "bf16c_table");
  const int64_t K = src.cols, nb = K / kBf16cBlock;
  // About 2^22 sampled weights, rows spread over the matrix.
  const int64_t want = std::max<int64_t>(1, (int64_t{1} << 22) / K);
  const int64_t step = std::max<int64_t>(1, src.rows / want);
  const auto* w = static_cast<const uint16_t*>(src.weights());
  std::array<int64_t, 256> count{};
  for (int64_t r = 0; r < src.rows; r += step)
    for (int64_t k = 0; k < K; ++k) ++count[w[r * K + k] >> 8];
  std::array<int, 256> order;
  std::iota(order.begin(), order.end(), 0);
  // Most frequent first; ties by value, so the table does not depend on the sort.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return count[a] > count[b]; });
  Bf16cTable t;
  std::array<bool, 256> in{};
  for (int i = 0; i < 16; ++i) {
    t.table[i] = static_cast<uint8_t>(order[i]);
    in[order[i]] = true;
  }
  int64_t blocks = 0, esc = 0;
  for (int64_t r = 0; r < src.rows; r += step)
    for (int64_t b = 0; b < nb; ++b) {
      ++blocks;
      for (int64_t k = 0; k < kBf16cBlock; ++k)
        if (!in[w[r * K + b * kBf16cBlock + k] >> 8]) {
          ++esc;
          break;
        }
    }
  t.escape_share = blocks ? static_cast<double>(esc) / static_cast<double>(blocks) : 0.0;
  return t;
}

DenseMatrix dense_to_bf16c(const DenseMatrix& src, const Bf16cTable& table,
                           const std::function<void(int64_t, int64_t)>& rows_done, uint8_t* dst) {
  check_source(src, "dense_to_bf16c");
  const int64_t rows = src.rows, K = src.cols, nb = K / kBf16cBlock;
  const int64_t row_bytes = nb * kBf16cBlockBytes;
  DenseMatrix m;
  m.type = WType::BF16C;
  m.rows = rows;
  m.cols = K;
  if (!dst) m.owned.resize(static_cast<size_t>(rows * row_bytes));
  uint8_t* out = dst ? dst : m.owned.data();
  std::array<int, 256> code;
  code.fill(-1);
  for (int i = 0; i < 16; ++i)
    if (code[table.table[i]] < 0) code[table.table[i]] = i;
  const auto* w = static_cast<const uint16_t*>(src.weights());

  // Escapes found by each chunk (keyed by its first row), joined in row order after.
  struct ChunkEscapes {
    std::vector<uint32_t> count;   // per row of the chunk
    std::vector<uint32_t> block;
    std::vector<uint16_t> raw;
  };
  std::map<int64_t, ChunkEscapes> found;
  std::mutex found_mu;
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1, int) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t r0 = c * kChunkRows, r1 = std::min(rows, r0 + kChunkRows);
      ChunkEscapes e;
      e.count.assign(static_cast<size_t>(r1 - r0), 0);
      for (int64_t r = r0; r < r1; ++r) {
        const uint16_t* s = w + r * K;
        for (int64_t b = 0; b < nb; ++b) {
          const uint16_t* v = s + b * kBf16cBlock;
          uint8_t* L = out + r * row_bytes + b * kBf16cBlockBytes;
          uint8_t* N = L + kBf16cBlock;
          bool escape = false;
          for (int p = 0; p < 64; ++p) {
            const uint16_t x = v[bf16c_column(p)];
            L[p] = static_cast<uint8_t>(x & 0xff);
            int ci = code[x >> 8];
            if (ci < 0) {
              escape = true;
              ci = 0;
            }
            if (p < 32) N[p] = static_cast<uint8_t>(ci);
            else N[p - 32] = static_cast<uint8_t>(N[p - 32] | (ci << 4));
          }
          if (escape) {
            ++e.count[static_cast<size_t>(r - r0)];
            e.block.push_back(static_cast<uint32_t>(b));
            e.raw.insert(e.raw.end(), v, v + kBf16cBlock);
          }
        }
      }
      if (rows_done) rows_done(r0, r1);
      std::lock_guard<std::mutex> lock(found_mu);
      found.emplace(r0, std::move(e));
    }
  });
  auto aux = std::make_shared<Bf16cAux>();
  std::memcpy(aux->table, table.table, sizeof aux->table);
  aux->esc_start.assign(static_cast<size_t>(rows + 1), 0);
  int64_t r = 0;
  for (auto& [r0, e] : found) {
    for (uint32_t n : e.count) {
      aux->esc_start[static_cast<size_t>(r + 1)] = aux->esc_start[static_cast<size_t>(r)] + n;
      ++r;
    }
    aux->esc_block.insert(aux->esc_block.end(), e.block.begin(), e.block.end());
    aux->raw.insert(aux->raw.end(), e.raw.begin(), e.raw.end());
    std::vector<uint16_t>().swap(e.raw);
  }
  if (aux->esc_block.size() > UINT32_MAX) fail("dense_to_bf16c: too many escape blocks");
  m.bf16c = std::move(aux);
  m.data = out;
  return m;
}

namespace detail {

void bf16c_decode_block(const DenseMatrix& W, int64_t r, int64_t b, uint16_t* out) {
  const Bf16cAux& a = *W.bf16c;
  const int64_t K = W.cols, nb = K / kBf16cBlock;
  for (uint32_t e = a.esc_start[static_cast<size_t>(r)]; e < a.esc_start[static_cast<size_t>(r + 1)]; ++e)
    if (a.esc_block[e] == static_cast<uint32_t>(b)) {
      std::memcpy(out, a.raw.data() + static_cast<size_t>(e) * kBf16cBlock, kBf16cBlock * sizeof(uint16_t));
      return;
    }
  const uint8_t* L = static_cast<const uint8_t*>(W.weights()) + (r * nb + b) * kBf16cBlockBytes;
  const uint8_t* N = L + kBf16cBlock;
  for (int p = 0; p < 64; ++p) {
    const int ci = p < 32 ? (N[p] & 15) : (N[p - 32] >> 4);
    out[bf16c_column(p)] = static_cast<uint16_t>(a.table[ci] << 8 | L[p]);
  }
}

void bf16c_decode_row(const DenseMatrix& W, int64_t r, uint16_t* out) {
  for (int64_t b = 0; b < W.cols / kBf16cBlock; ++b) bf16c_decode_block(W, r, b, out + b * kBf16cBlock);
}

}  // namespace detail

}  // namespace qinfer::ops
