// Public kernel entry points: validation, path selection (cpuid + QINFER_KERNELS)
// and threading over output rows. The per-ISA row kernels live in kernels_*.cc.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "ops/cpu_features.h"
#include "ops/kernel_table.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace qinfer::ops {
namespace {

using detail::KernelTable;

const KernelTable* table_by_name(const std::string& name) {
  const CpuFeatures& f = cpu_features();
  if (name.empty()) {
    if (f.has_avx512_path()) return &detail::avx512_kernels();
    if (f.has_avx2_path()) return &detail::avx2_kernels();
    return &detail::scalar_kernels();
  }
  if (name == "scalar") return &detail::scalar_kernels();
  if (name == "avx2") {
    if (!f.has_avx2_path()) fail("kernel path avx2 needs avx2+fma+f16c; this CPU has: ", f.describe());
    return &detail::avx2_kernels();
  }
  if (name == "avx512") {
    if (!f.has_avx512_path())
      fail("kernel path avx512 needs avx512f/bw/vl/dq/vnni/bf16; this CPU has: ", f.describe());
    return &detail::avx512_kernels();
  }
  fail("unknown kernel path '", name, "' (QINFER_KERNELS must be scalar, avx2 or avx512)");
}

std::atomic<const KernelTable*>& table_slot() {
  static std::atomic<const KernelTable*> slot{nullptr};
  return slot;
}

std::atomic<bool>& bf16_dot_flag() {
  static std::atomic<bool> flag{[] {
    const char* env = std::getenv("QINFER_KERNEL_OPTS");
    return env && std::strstr(env, "bf16_dot") != nullptr;
  }()};
  return flag;
}

const KernelTable& table() {
  const KernelTable* t = table_slot().load(std::memory_order_acquire);
  if (!t) {
    const char* env = std::getenv("QINFER_KERNELS");
    t = table_by_name(env ? env : "");
    table_slot().store(t, std::memory_order_release);
  }
  return *t;
}

constexpr int64_t kRowBlock = 16;          // rows per scheduling unit
static_assert(kRowBlock % GptqMatrix::kTileRows == 0, "GPTQ kernels take whole row tiles");
constexpr double kMinChunkWork = 256e3;    // ~bytes (+ flops / 2) per thread chunk

thread_local bool t_in_kernel = false;

// Runs fn(row_begin, row_end) over [0, rows) in 16-row aligned contiguous
// pieces, inline when the work is small or already inside a kernel. Threads take
// pieces from a shared counter (about 8 per thread), so a thread that is slowed
// down (other processes on the cores) does not hold up the rest.
template <typename Fn>
void for_rows(int64_t rows, double work_per_row, const Fn& fn) {
  const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  const double block_work = std::max(1.0, work_per_row * kRowBlock);
  const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(kMinChunkWork / block_work));
  const int64_t threads = std::min<int64_t>(ThreadPool::global().size(), blocks / grain);
  if (t_in_kernel || threads <= 1) {
    fn(0, rows);
    return;
  }
  const int64_t piece = std::max((grain + 3) / 4, blocks / (threads * 8));
  std::atomic<int64_t> next{0};
  parallel_for(threads, 1, [&](int64_t, int64_t, int) {
    t_in_kernel = true;
    for (;;) {
      const int64_t b = next.fetch_add(piece, std::memory_order_relaxed);
      if (b >= blocks) break;
      fn(b * kRowBlock, std::min(rows, (b + piece) * kRowBlock));
    }
    t_in_kernel = false;
  });
}

int64_t elem_bytes(WType t) {
  switch (t) {
    case WType::F32: return 4;
    case WType::BF16: case WType::F16: return 2;
    case WType::Q8: return 1;
  }
  return 0;
}

void check_dense(const DenseMatrix& W, const char* what) {
  if (W.rows <= 0 || W.cols <= 0) fail(what, ": weight matrix has no shape (", W.rows, " x ", W.cols, ")");
  if (!W.weights()) fail(what, ": weight matrix has no data");
  if (W.type == WType::Q8) {
    if (static_cast<int64_t>(W.row_scale.size()) != W.rows)
      fail(what, ": Q8 matrix has ", W.row_scale.size(), " row scales for ", W.rows, " rows");
    if (!W.owned.empty() && static_cast<int64_t>(W.owned.size()) != W.rows * W.cols)
      fail(what, ": Q8 matrix holds ", W.owned.size(), " codes, expected ", W.rows * W.cols);
  }
}

void check_io(const float* X, int64_t n, const float* Y, const char* what) {
  if (n < 0) fail(what, ": negative row count n = ", n);
  if (n > 0 && (!X || !Y)) fail(what, ": X and Y must be non-null");
}

}  // namespace

const char* wtype_name(WType t) {
  switch (t) {
    case WType::F32: return "F32";
    case WType::BF16: return "BF16";
    case WType::F16: return "F16";
    case WType::Q8: return "Q8";
  }
  return "?";
}

int64_t DenseMatrix::bytes() const {
  return rows * cols * elem_bytes(type) + static_cast<int64_t>(row_scale.size() * sizeof(float));
}

DenseMatrix dense_view(WType t, const void* data, int64_t rows, int64_t cols) {
  if (t == WType::Q8) fail("dense_view: Q8 matrices are made by dense_to_q8, not borrowed");
  if (t != WType::F32 && t != WType::BF16 && t != WType::F16) fail("dense_view: invalid weight type");
  if (rows <= 0 || cols <= 0) fail("dense_view: rows and cols must be positive (got ", rows, " x ", cols, ")");
  if (!data) fail("dense_view: data is null");
  DenseMatrix m;
  m.type = t;
  m.rows = rows;
  m.cols = cols;
  m.data = data;
  return m;
}

DenseMatrix dense_to_q8(const DenseMatrix& src, const std::function<void(int64_t, int64_t)>& rows_done,
                        uint8_t* dst) {
  check_dense(src, "dense_to_q8");
  DenseMatrix m;
  m.type = WType::Q8;
  m.rows = src.rows;
  m.cols = src.cols;
  if (src.type == WType::Q8) {
    m.owned.assign(static_cast<const uint8_t*>(src.weights()),
                   static_cast<const uint8_t*>(src.weights()) + src.rows * src.cols);
    m.row_scale = src.row_scale;
    m.data = m.owned.data();
    return m;
  }
  if (!dst) m.owned.resize(src.rows * src.cols);
  uint8_t* codes = dst ? dst : m.owned.data();
  m.row_scale.resize(src.rows);
  const int64_t K = src.cols;
  const void* p = src.weights();
  auto load_row = [&](int64_t r, float* row) {
    switch (src.type) {
      case WType::F32: {
        const float* w = static_cast<const float*>(p) + r * K;
        std::copy(w, w + K, row);
        break;
      }
      case WType::BF16: {
        const uint16_t* w = static_cast<const uint16_t*>(p) + r * K;
        for (int64_t k = 0; k < K; ++k) row[k] = detail::bf16_to_f32(w[k]);
        break;
      }
      default: {
        const uint16_t* w = static_cast<const uint16_t*>(p) + r * K;
        for (int64_t k = 0; k < K; ++k) row[k] = detail::f16_to_f32(w[k]);
        break;
      }
    }
  };
  std::atomic<int64_t> bad{-1};  // first non-finite weight seen (threads must not throw)
  for_rows(src.rows, static_cast<double>(K) * 8, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(K);
    for (int64_t r = r0; r < r1; ++r) {
      load_row(r, row.data());
      float amax = 0;
      for (int64_t k = 0; k < K; ++k) {
        if (!std::isfinite(row[k])) {
          int64_t none = -1;
          bad.compare_exchange_strong(none, r * K + k);
          row[k] = 0;
        }
        amax = std::max(amax, std::fabs(row[k]));
      }
      const float scale = amax > 0 ? amax / 127.0f : 1.0f;
      const float inv = 1.0f / scale;
      int8_t* out = reinterpret_cast<int8_t*>(codes) + r * K;
      for (int64_t k = 0; k < K; ++k)
        out[k] = static_cast<int8_t>(std::clamp(std::lround(row[k] * inv), -127l, 127l));
      m.row_scale[r] = scale;
    }
    if (rows_done) rows_done(r0, r1);
  });
  if (bad >= 0) fail("dense_to_q8: weight [", bad / K, "][", bad % K, "] is not finite");
  m.data = codes;
  return m;
}

void matmul(const DenseMatrix& W, const float* X, int64_t n, float* Y) {
  check_dense(W, "matmul");
  check_io(X, n, Y, "matmul");
  if (n == 0) return;
  const KernelTable& t = table();
  const double work = static_cast<double>(W.cols) * (elem_bytes(W.type) + n);
  if (W.type == WType::BF16 && t.bf16_dot_rows && bf16_dot_flag().load(std::memory_order_relaxed)) {
    const int64_t ld = (W.cols + detail::kBf16DotPad - 1) / detail::kBf16DotPad * detail::kBf16DotPad;
    std::vector<uint16_t> xb(n * ld, 0);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < W.cols; ++k) xb[j * ld + k] = detail::f32_to_bf16(X[j * W.cols + k]);
    for_rows(W.rows, work, [&](int64_t r0, int64_t r1) { t.bf16_dot_rows(W, xb.data(), n, Y, r0, r1); });
    return;
  }
  for_rows(W.rows, work, [&](int64_t r0, int64_t r1) { t.dense_rows(W, X, n, Y, r0, r1); });
}

void matmul(const GptqMatrix& W, const float* X, int64_t n, float* Y) {
  BatchProduct item;
  item.gptq = &W;
  item.X = X;
  item.n = n;
  item.Y = Y;
  matmul_batch(&item, 1);
}

void matmul_batch(const BatchProduct* items, size_t count) {
  const KernelTable& t = table();
  constexpr int64_t TR = GptqMatrix::kTileRows;
  const bool bf16_dot = bf16_dot_flag().load(std::memory_order_relaxed);
  std::vector<detail::Q4Input> xq(count);
  std::vector<char> active(count, 0);            // runs in the shared pass
  std::vector<int64_t> row_start(count + 1, 0);  // active items' rows laid end to end, tile-aligned
  std::vector<int64_t> mem_start(count + 1, 0);  // quantized activations, one allocation
  double work = 0, quant = 0;
  for (size_t i = 0; i < count; ++i) {
    const BatchProduct& it = items[i];
    int64_t rows = 0, bytes = 0;
    check_io(it.X, it.n, it.Y, "matmul_batch");
    if (it.n != 0) {
      if (!it.gptq == !it.dense) fail("matmul_batch: item ", i, " needs exactly one weight matrix (gptq or dense)");
      if (it.gptq) {
        rows = it.gptq->tiles() * TR;
        work += static_cast<double>(it.gptq->padded_cols()) * (0.5 + it.n) * it.gptq->rows();
        quant += static_cast<double>(it.gptq->padded_cols()) * it.n;
        bytes = it.n >= detail::kQ4PanelMin
                    ? (it.gptq->identity_layout() ? 0 : it.n * it.gptq->padded_cols() * int64_t{sizeof(float)})
                    : detail::q4_input_bytes(*it.gptq, it.n);
        active[i] = 1;
      } else {
        check_dense(*it.dense, "matmul_batch");
        if (it.dense->type == WType::BF16 && t.bf16_dot_rows && bf16_dot) {
          matmul(*it.dense, it.X, it.n, it.Y);  // the opt-in bf16-dot path runs alone
        } else {
          rows = (it.dense->rows + kRowBlock - 1) / kRowBlock * kRowBlock;
          work += static_cast<double>(it.dense->cols) * (elem_bytes(it.dense->type) + it.n) * it.dense->rows;
          active[i] = 1;
        }
      }
    }
    row_start[i + 1] = row_start[i] + rows;
    mem_start[i + 1] = mem_start[i] + bytes;
  }
  const int64_t total = row_start[count];
  if (total == 0) return;
  // One block from this thread (not many small ones from the workers' malloc
  // arenas, which keep freed memory resident).
  std::unique_ptr<unsigned char[]> raw(new unsigned char[mem_start[count] + 64]);
  unsigned char* mem = raw.get() + (64 - reinterpret_cast<uintptr_t>(raw.get()) % 64) % 64;
  // Quantize every GPTQ item's activations (in parallel when there is enough).
  // Items fed the same activations (a decode token's copies for its experts)
  // share one quantization.
  std::vector<int64_t> same_as(count, -1);
  for (size_t i = 1; i < count; ++i) {
    const BatchProduct& it = items[i];
    if (!active[i] || !it.gptq || !it.gptq->identity_layout() || it.n >= detail::kQ4PanelMin) continue;
    for (size_t j = 0; j < i; ++j) {
      const BatchProduct& o = items[j];
      if (active[j] && o.gptq && same_as[j] < 0 && o.gptq->identity_layout() && o.gptq->cols() == it.gptq->cols() &&
          o.n == it.n && std::memcmp(o.X, it.X, static_cast<size_t>(it.n * it.gptq->cols()) * sizeof(float)) == 0) {
        same_as[i] = static_cast<int64_t>(j);
        break;
      }
    }
  }
  // Prefill-sized items take fp32 activations in packed column order instead.
  std::vector<const float*> xp(count, nullptr);
  auto quantize = [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      const BatchProduct& it = items[i];
      if (!active[i] || !it.gptq || same_as[i] >= 0) continue;
      if (it.n < detail::kQ4PanelMin) {
        xq[i] = detail::quantize_q4_input(t, *it.gptq, it.X, it.n, mem + mem_start[i]);
      } else if (it.gptq->identity_layout()) {
        xp[i] = it.X;
      } else {
        float* buf = reinterpret_cast<float*>(mem + mem_start[i]);
        for (int64_t j = 0; j < it.n; ++j)
          it.gptq->gather_input(it.X + j * it.gptq->cols(), buf + j * it.gptq->padded_cols());
        xp[i] = buf;
      }
    }
  };
  if (count > 1 && quant >= 1 << 16 && !t_in_kernel) parallel_for(static_cast<int64_t>(count), 1, quantize);
  else quantize(0, static_cast<int64_t>(count), 0);
  for (size_t i = 0; i < count; ++i)
    if (same_as[i] >= 0) xq[i] = xq[same_as[i]];
  for_rows(total, work / total, [&](int64_t b, int64_t e) {
    size_t i = std::upper_bound(row_start.begin(), row_start.end(), b) - row_start.begin() - 1;
    for (; i < count && row_start[i] < e; ++i) {
      if (!active[i]) continue;
      const BatchProduct& it = items[i];
      const int64_t lo = std::max(b, row_start[i]) - row_start[i];
      const int64_t hi = std::min(e - row_start[i], it.gptq ? it.gptq->rows() : it.dense->rows);
      if (lo >= hi) continue;
      if (it.gptq && xp[i]) t.gptq_rows_f32(*it.gptq, xp[i], it.n, it.Y, lo, hi);
      else if (it.gptq) t.gptq_rows(*it.gptq, xq[i], it.Y, lo, hi);
      else t.dense_rows(*it.dense, it.X, it.n, it.Y, lo, hi);
    }
  });
}

void set_kernel_options(const KernelOptions& o) { bf16_dot_flag().store(o.bf16_dot); }

KernelOptions kernel_options() {
  KernelOptions o;
  o.bf16_dot = bf16_dot_flag().load();
  return o;
}

const char* kernel_path() { return table().name; }

void set_kernel_path(const char* name) {
  table_slot().store(table_by_name(name ? name : ""), std::memory_order_release);
}

}  // namespace qinfer::ops
