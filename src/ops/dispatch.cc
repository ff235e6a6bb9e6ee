// Public kernel entry points: validation, path selection (cpuid + QINFER_KERNELS)
// and threading over output rows. The per-ISA row kernels live in kernels_*.cc.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include <sys/mman.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "ops/cpu_features.h"
#include "ops/matmul_table.h"
#include "util/error.h"
#include "util/log.h"
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

struct OptionsState {
  std::atomic<bool> bf16_dot{false};
  std::atomic<Bf16Kernel> bf16{Bf16Kernel::kProbe};
  std::atomic<Q8Kernel> q8{Q8Kernel::kProbe};
  std::atomic<Q4Kernel> q4{Q4Kernel::kProbe};
  std::atomic<Bf16cKernel> bf16c{Bf16cKernel::kProbe};
  std::atomic<Q4Prefill> q4_prefill{Q4Prefill::kProbe};
  OptionsState() {
    const KernelOptions o = parse_kernel_options(std::getenv("QINFER_KERNEL_OPTS"));
    bf16_dot = o.bf16_dot;
    bf16 = o.bf16;
    q8 = o.q8;
    q4 = o.q4;
    bf16c = o.bf16c;
    q4_prefill = o.q4_prefill;
  }
};

OptionsState& options_state() {
  static OptionsState s;
  return s;
}

std::atomic<bool>& bf16_dot_flag() { return options_state().bf16_dot; }

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
  int64_t piece = std::max((grain + 3) / 4, blocks / (threads * 8));
  if (piece > 1) piece += piece & 1;  // whole pairs of blocks: prefill panels go two at a time
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
    case WType::BF16C: return 2;   // 1.5: a work estimate only (weight_bytes has the size)
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
  if (W.type == WType::BF16C) {
    if (W.cols % kBf16cBlock != 0) fail(what, ": BF16C matrix has ", W.cols, " columns (a multiple of 64 expected)");
    // >=: a view of a matrix's first rows (model::row_prefix) shares the whole index
    if (!W.bf16c || static_cast<int64_t>(W.bf16c->esc_start.size()) < W.rows + 1)
      fail(what, ": BF16C matrix lacks its table and escape index");
    if (!W.owned.empty() && static_cast<int64_t>(W.owned.size()) != W.weight_bytes())
      fail(what, ": BF16C matrix holds ", W.owned.size(), " stream bytes, expected ", W.weight_bytes());
  }
}

void check_io(const float* X, int64_t n, const float* Y, const char* what) {
  if (n < 0) fail(what, ": negative row count n = ", n);
  if (n > 0 && (!X || !Y)) fail(what, ": X and Y must be non-null");
}

// Scratch of `bytes` bytes from this thread's heap, `data` 64-byte aligned.
struct Aligned64 {
  std::unique_ptr<unsigned char[]> raw;
  unsigned char* data;
  explicit Aligned64(size_t bytes)
      : raw(new unsigned char[bytes + 64]), data(raw.get() + (64 - reinterpret_cast<uintptr_t>(raw.get()) % 64) % 64) {}
};

}  // namespace

const char* wtype_name(WType t) {
  switch (t) {
    case WType::F32: return "F32";
    case WType::BF16: return "BF16";
    case WType::F16: return "F16";
    case WType::Q8: return "Q8";
    case WType::BF16C: return "BF16C";
  }
  return "?";
}

int64_t DenseMatrix::weight_bytes() const {
  return type == WType::BF16C ? bf16c_stream_bytes(rows, cols) : rows * cols * elem_bytes(type);
}

int64_t DenseMatrix::bytes() const {
  return weight_bytes() + static_cast<int64_t>(row_scale.size() * sizeof(float)) + (bf16c ? bf16c->bytes() : 0);
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
      case WType::BF16C: {
        std::vector<uint16_t> w(static_cast<size_t>(K));
        detail::bf16c_decode_row(src, r, w.data());
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

namespace {

// ---- BF16 dense: the exact kernels, the probe that picks one, the opt-in ----

int64_t bf16_ld(int64_t cols) { return (cols + detail::kBf16DotPad - 1) / detail::kBf16DotPad * detail::kBf16DotPad; }

// The opt-in bf16_dot's one-row kernels (where the path has both): tiles of rows or
// rows one after another.
enum class DotRows { kProbe, kTiles, kSeq };
DotRows dot_rows_on(const KernelTable& t);   // below

// Activation rows rounded to one bf16 each (the opt-in bf16_dot); `rows` the one-row
// kernel (kProbe: the probe's pick).
void bf16_dot_product(const KernelTable& t, const DenseMatrix& W, const float* X, int64_t n, float* Y, double work,
                      DotRows rows = DotRows::kProbe) {
  const int64_t ld = bf16_ld(W.cols);
  std::vector<uint16_t> xb(n * ld, 0);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < W.cols; ++k) xb[j * ld + k] = detail::f32_to_bf16(X[j * W.cols + k]);
  if (n == 1 && t.bf16_dot_seq_rows) {
    if (rows == DotRows::kProbe) rows = dot_rows_on(t);
    if (rows == DotRows::kSeq)
      return for_rows(W.rows, work, [&](int64_t r0, int64_t r1) { t.bf16_dot_seq_rows(W, xb.data(), Y, r0, r1); });
  }
  for_rows(W.rows, work, [&](int64_t r0, int64_t r1) { t.bf16_dot_rows(W, xb.data(), n, Y, r0, r1); });
}

// Split: activation row j becomes `parts` bf16 rows p*j .. p*j + p - 1 (hi =
// bf16(x), then bf16 of what is left; each remainder is exact in fp32), one
// pass over the weights for all of them, Y = Σ parts. The activation error is
// at most 2^-18 |x| with 2 parts, 2^-27 |x| with 3 (below fp32's own rounding);
// products of bf16 pairs are exact in fp32, so the rest is the fp32
// accumulation's, as on the widening path. (An infinite activation gives NaN,
// inf - inf in the split.)
void bf16_split_product(const KernelTable& t, int parts, const DenseMatrix& W, const float* X, int64_t n, float* Y,
                        double work) {
  const int64_t ld = bf16_ld(W.cols), rows = W.rows;
  std::vector<uint16_t> xb(parts * n * ld, 0);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < W.cols; ++k) {
      float rest = X[j * W.cols + k];
      for (int p = 0; p < parts; ++p) {
        const uint16_t h = detail::f32_to_bf16(rest);
        xb[(parts * j + p) * ld + k] = h;
        rest -= detail::bf16_to_f32(h);
      }
    }
  if (parts == 2 && n == 1 && t.bf16_split2_rows)  // decode: xb is [hi][lo]; the fused kernel, no partial outputs
    return for_rows(rows, work, [&](int64_t r0, int64_t r1) { t.bf16_split2_rows(W, xb.data(), Y, r0, r1); });
  std::vector<float> yp(parts * n * rows);
  for_rows(rows, work, [&](int64_t r0, int64_t r1) {
    t.bf16_dot_rows(W, xb.data(), parts * n, yp.data(), r0, r1);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t r = r0; r < r1; ++r) {
        float y = 0;
        for (int p = parts - 1; p >= 0; --p) y += yp[(parts * j + p) * rows + r];  // small parts first
        Y[j * rows + r] = y;
      }
  });
}

// The matvec_rows mode of a widening kernel; -1 for the others.
int widen_mode(Bf16Kernel k) {
  switch (k) {
    case Bf16Kernel::kWiden: return detail::kMatvecSeqNta;
    case Bf16Kernel::kWidenT0: return detail::kMatvecSeqT0;
    case Bf16Kernel::kWidenNoPf: return detail::kMatvecSeqNone;
    case Bf16Kernel::kWidenTiled: return detail::kMatvecTiled;
    default: return -1;
  }
}

bool bf16_available(const KernelTable& t, Bf16Kernel k) {
  switch (k) {
    case Bf16Kernel::kWiden: return true;
    case Bf16Kernel::kWidenT0: case Bf16Kernel::kWidenNoPf: case Bf16Kernel::kWidenTiled:
      return t.matvec_rows != nullptr;
    case Bf16Kernel::kWiden256: return &t == &detail::avx512_kernels() && cpu_features().has_avx2_path();
    case Bf16Kernel::kSplit: case Bf16Kernel::kSplit3: return t.bf16_dot_rows != nullptr;
    case Bf16Kernel::kAmx: return &t == &detail::avx512_kernels() && cpu_features().amx_bf16;
    case Bf16Kernel::kProbe: return false;
  }
  return false;
}

// The three-part split on AMX tiles: X packed once (token blocks across threads,
// into a per-thread buffer that only grows), then rows split across threads.
void bf16_amx_product(const DenseMatrix& W, const float* X, int64_t n, float* Y, double work) {
  thread_local std::vector<uint16_t> buf;
  const int64_t elems = detail::amx_bf16_input_elems(n, W.cols);
  if (static_cast<int64_t>(buf.size()) < elems) buf.resize(elems);
  const detail::AmxBf16Input in = detail::amx_bf16_input_view(n, W.cols, buf.data());
  if (t_in_kernel) detail::pack_amx_bf16_blocks(X, in, 0, in.ntb);
  else parallel_for(in.ntb, 2, [&](int64_t b0, int64_t b1, int) { detail::pack_amx_bf16_blocks(X, in, b0, b1); });
  for_rows(W.rows, work, [&](int64_t r0, int64_t r1) { detail::amx_bf16_rows(W, in, Y, r0, r1); });
}

void bf16_exact_product(const KernelTable& t, Bf16Kernel k, const DenseMatrix& W, const float* X, int64_t n,
                        float* Y, double work) {
  if (k == Bf16Kernel::kAmx) {
    if (W.cols % 32 == 0) return bf16_amx_product(W, X, n, Y, work);
    k = Bf16Kernel::kWiden;  // the tiles take whole 32-column blocks; as exact
  }
  if (k == Bf16Kernel::kSplit || k == Bf16Kernel::kSplit3)
    return bf16_split_product(t, k == Bf16Kernel::kSplit ? 2 : 3, W, X, n, Y, work);
  const int mode = widen_mode(k);
  if (n == 1 && mode > 0)
    return for_rows(W.rows, work, [&](int64_t r0, int64_t r1) { t.matvec_rows(mode, W, X, Y, r0, r1); });
  const KernelTable& rt = k == Bf16Kernel::kWiden256 ? detail::avx2_kernels() : t;
  for_rows(W.rows, work, [&](int64_t r0, int64_t r1) { rt.dense_rows(W, X, n, Y, r0, r1); });
}

// Rows [r0, r1) of a dense product in matmul_batch's shared pass: mode from
// shared_pass_mode (0 = the table's dense_rows).
void dense_rows_mode(const KernelTable& t, int mode, const DenseMatrix& W, const float* X, int64_t n, float* Y,
                     int64_t r0, int64_t r1) {
  if (mode > 0 && n == 1) t.matvec_rows(mode, W, X, Y, r0, r1);
  else t.dense_rows(W, X, n, Y, r0, r1);
}

double dense_work(const DenseMatrix& W, int64_t n) {
  return static_cast<double>(W.cols) * (elem_bytes(W.type) + n);
}

// ---- Start-up probes: what the BF16 and the int8 kernel choices share ----

// Index of a kernel path, for per-path probe results.
int path_index(const KernelTable& t) {
  return &t == &detail::scalar_kernels() ? 0 : &t == &detail::avx2_kernels() ? 1 : 2;
}

// A probe's weight matrix: rows x cols elements of E, value(i) at flat index i, in
// transparent huge pages first touched by the pool threads that read each part,
// like the model's resident dense weights (model/resident.cc): on 4 KiB pages the
// prefetch variants rank differently (measured on the AVX2 EPYC host: the BF16 probe
// picked widen on 4 KiB pages, widen_tiled on huge pages, which the 1 GB lm_head in
// bench_ops also prefers there).
template <class E>
using ProbeBuffer = std::unique_ptr<E, decltype(&std::free)>;
// count elements of E in transparent huge pages, untouched (a probe's `what` names it
// in the out-of-memory error).
template <class E>
ProbeBuffer<E> huge_page_buffer(size_t count, const char* what) {
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t bytes = (count * sizeof(E) + kHuge - 1) / kHuge * kHuge;
  ProbeBuffer<E> buf(static_cast<E*>(std::aligned_alloc(kHuge, bytes)), &std::free);
  if (!buf) fail(what, " kernel probe: out of memory for ", bytes, " bytes");
  madvise(buf.get(), bytes, MADV_HUGEPAGE);  // advice only; ignored where THP is off
  return buf;
}
template <class E, class Value>
ProbeBuffer<E> probe_matrix(int64_t rows, int64_t cols, const char* what, const Value& value) {
  ProbeBuffer<E> buf = huge_page_buffer<E>(static_cast<size_t>(rows * cols), what);
  E* w = buf.get();
  for_rows(rows, static_cast<double>(cols), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0 * cols; i < r1 * cols; ++i) w[i] = value(static_cast<uint64_t>(i));
  });
  return buf;
}

// Writes back and evicts [p, p + bytes) from every cache level (clflush, SSE2; the
// pool threads take a part each). The decode probes flush their matrices before each
// run: a VM's L3 may hold 64 MiB (the Intel Xeon hosts report 260 and 480 MiB; there
// the BF16 probe read 46-61 GB/s with two threads where memory gives 24-30), and a
// decode step reads its weights from memory.
// With CLFLUSHOPT where the CPU has it (the serializing clflush is ~50x slower).
#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("clflushopt"))) void flush_lines_opt(const char* c, int64_t l0, int64_t l1) {
  for (int64_t l = l0; l < l1; ++l) _mm_clflushopt(const_cast<char*>(c + 64 * l));
  _mm_sfence();
}
#endif
void flush_from_caches(const void* p, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  const char* c = static_cast<const char*>(p);
  const int64_t lines = static_cast<int64_t>((bytes + 63) / 64);
  const bool opt = cpu_features().clflushopt;
  parallel_for(lines, 4096, [&](int64_t l0, int64_t l1, int) {
    if (opt) return flush_lines_opt(c, l0, l1);
    for (int64_t l = l0; l < l1; ++l) _mm_clflush(c + 64 * l);
    _mm_mfence();
  });
#else
  (void)p, (void)bytes;
#endif
}

// A probe's activation rows: n values -3..3.
std::vector<float> probe_activations(int64_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  return x;
}

// Best time of each of `count` candidates (run(c) times candidate c) over 4
// alternating rounds after one warm-up round (page faults, thread wake-up);
// prepare() runs untimed before each timed run. A candidate more than kProbeDrop
// times slower than the fastest after two timed rounds sits out the last two
// (probe_score still weighs its best of two), which keeps the six-way
// BF16 decode probe well under a second on a loaded two-core host (Intel Xeon with
// AMX, session 28: 0.48-0.50 s quiet, 2.2 s beside a test run, widen and widen256
// 2.4-3x slower than widen_tiled there).
constexpr double kProbeDrop = 1.6;
struct NoPrepare {
  void operator()() const {}
};
template <class Run, class Prepare = NoPrepare>
std::vector<double> probe_times(size_t count, const Run& run, const Prepare& prepare = {}) {
  std::vector<double> best(count, 1e30);
  for (int round = 0; round < 5; ++round)
    for (size_t c = 0; c < count; ++c) {
      if (round >= 3 && best[c] > kProbeDrop * *std::min_element(best.begin(), best.end())) continue;
      if (round > 0) prepare();
      const auto t0 = std::chrono::steady_clock::now();
      run(c);
      if (round > 0)
        best[c] = std::min(best[c], std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  return best;
}

// A kernel probe's timings: each candidate with every pool thread (all) and on the
// calling thread alone (one: for_rows runs inline), and the pick. Two threads of a
// shared VM often stream no faster than its memory lets through at that moment,
// so in a busy minute every candidate ties there and the all-thread ranking is
// noise; one core's rate is the kernel's own ceiling, which sets the pace when the
// memory is not busy (AMD Zen 4, 2 threads, lm_head, alternating passes in one
// process: widen_nopf 56.9 GB/s, widen_t0 45.2, widen 44.5 in a quiet second, all
// 31-35 in a busy one; one thread: widen_nopf 29.7, widen 23.4). The pick minimizes
// all / min(all) + one / min(one): the fastest on both counts, and where the
// all-thread times tie, the fastest core.
// Panel probes (compute-bound, every candidate's rate its own) time with every
// thread only: with_one false.
struct KernelProbe {
  std::vector<double> all, one;
  size_t pick = 0;
};
// Candidate c's score: its time over the fastest one's, with every thread plus (when
// timed) on one thread; lower is better.
double probe_score(const KernelProbe& p, size_t c) {
  const double all_min = *std::min_element(p.all.begin(), p.all.end());
  if (p.one.empty()) return p.all[c] / all_min;
  return p.all[c] / all_min + p.one[c] / *std::min_element(p.one.begin(), p.one.end());
}
template <class Run, class Prepare = NoPrepare>
KernelProbe probe_kernels(size_t count, const Run& run, bool with_one = true, const Prepare& prepare = {}) {
  KernelProbe p;
  p.all = probe_times(count, run, prepare);
  if (with_one && ThreadPool::global().size() > 1 && !t_in_kernel) {
    struct Inline {   // for_rows runs on this thread while it lives
      Inline() { t_in_kernel = true; }
      ~Inline() { t_in_kernel = false; }
    } inline_rows;
    p.one = probe_times(count, run, prepare);
  }
  double best = 1e30;
  for (size_t c = 0; c < count; ++c) {
    const double score = probe_score(p, c);
    if (score < best) {
      best = score;
      p.pick = c;
    }
  }
  return p;
}
// Rate text for a probe line: "12.3 GB/s" with every thread, and ", 1 thread 6.1" when measured.
std::string probe_rates(const KernelProbe& p, size_t c, double gb) {
  char buf[96];
  if (p.one.empty()) std::snprintf(buf, sizeof buf, "%.1f GB/s", gb / p.all[c]);
  else std::snprintf(buf, sizeof buf, "%.1f GB/s, 1 thread %.1f", gb / p.all[c], gb / p.one[c]);
  return buf;
}

// Wall time spent in probes so far (kernel_probe_time): a ProbeTimer lives for each
// probe; only the outermost one on a thread adds its time (a probe may ask another).
struct ProbeClock {
  std::mutex m;
  double seconds = 0;
  int count = 0;
};
ProbeClock& probe_clock() {
  static ProbeClock c;
  return c;
}
thread_local int t_probe_depth = 0;
class ProbeTimer {
 public:
  ProbeTimer() : t0_(std::chrono::steady_clock::now()) { ++t_probe_depth; }
  ~ProbeTimer() {
    const bool outer = --t_probe_depth == 0;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    ProbeClock& c = probe_clock();
    std::lock_guard<std::mutex> lock(c.m);
    ++c.count;
    if (outer) c.seconds += s;
  }
  ProbeTimer(const ProbeTimer&) = delete;
  ProbeTimer& operator=(const ProbeTimer&) = delete;

 private:
  std::chrono::steady_clock::time_point t0_;
};

// The kernel in `slot`, probed (probe()) the first time: one probe at a time;
// callers needing the same slot wait for its answer.
template <class K, class Probe>
K probed_once(std::atomic<K>& slot, const Probe& probe) {
  K k = slot.load(std::memory_order_acquire);
  if (k != K::kProbe) return k;
  static std::mutex probing;
  std::lock_guard<std::mutex> lock(probing);
  k = slot.load(std::memory_order_acquire);
  if (k == K::kProbe) {
    ProbeTimer timer;
    k = probe();
    slot.store(k, std::memory_order_release);
  }
  return k;
}

// Per path: the probe's choice for decode (n < kQ4PanelMin) and panel products.
struct Bf16Choice {
  std::atomic<Bf16Kernel> decode{Bf16Kernel::kProbe}, panel{Bf16Kernel::kProbe};
};
Bf16Choice& bf16_choice(const KernelTable& t) {
  static Bf16Choice c[3];
  return c[path_index(t)];
}

// Times each exact candidate on a decode shape (16384 x 2048: a 64 MiB matrix,
// flushed from the caches before each run (flush_from_caches), so it measures
// memory streaming, with the short 4 KiB rows
// of the model's lm_head and projections, n = 1) and a panel shape (512 x 2048,
// n = 64: big enough that a kernel's fixed costs, such as AMX's activation
// packing, weigh as they do in a prefill chunk), best of 4 alternating rounds after one warm-up, and keeps the
// fastest (decode: timed with every thread and with one, probe_kernels). About 0.25 s on the SIMD paths (the
// scalar path probes a smaller matrix: its kernels are forced only, never a default on a SIMD host). The
// decode-only widening variants compete for decode only (for n > 1 they are widen).
// The BF16 probes' weights: small positive values, rows x cols (probe_matrix).
auto bf16_probe_weights(int64_t rows, int64_t cols) {
  return probe_matrix<uint16_t>(rows, cols, "BF16", [](uint64_t i) {
    return static_cast<uint16_t>(0x3c00 + ((i * 40503u) >> 7 & 0x1ff));
  });
}

Bf16Kernel bf16_probe(const KernelTable& t, bool panel) {
  std::vector<Bf16Kernel> cand;
  for (Bf16Kernel k : {Bf16Kernel::kWiden, Bf16Kernel::kWidenT0, Bf16Kernel::kWidenNoPf, Bf16Kernel::kWidenTiled,
                       Bf16Kernel::kWiden256, Bf16Kernel::kSplit3, Bf16Kernel::kAmx})
    if (bf16_available(t, k) && (panel ? widen_mode(k) <= 0 : k != Bf16Kernel::kAmx)) cand.push_back(k);
  if (cand.size() == 1) return cand[0];
  const bool scalar = &t == &detail::scalar_kernels();
  const int64_t rows = panel ? (scalar ? 64 : 512) : scalar ? 1024 : 16384, cols = 2048, n = panel ? 64 : 1;
  const auto w = bf16_probe_weights(rows, cols);
  const std::vector<float> x = probe_activations(n * cols);
  std::vector<float> y(n * rows);
  const DenseMatrix W = dense_view(WType::BF16, w.get(), rows, cols);
  const KernelProbe p = probe_kernels(
      cand.size(), [&](size_t c) { bf16_exact_product(t, cand[c], W, x.data(), n, y.data(), dense_work(W, n)); },
      !panel, [&] {
        if (!panel) flush_from_caches(w.get(), static_cast<size_t>(W.bytes()));
      });
  std::string line = cat("kernels ", t.name, ": BF16 dense ", panel ? "panels" : "decode", " uses ",
                         bf16_kernel_name(cand[p.pick]), " (probe, best of 4:");
  const double gb = static_cast<double>(W.bytes()) / 1e9;
  for (size_t c = 0; c < cand.size(); ++c) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %s %.3f ms", bf16_kernel_name(cand[c]), p.all[c] * 1e3);
    line += buf;
    if (!panel) line += cat(" (", probe_rates(p, c, gb), ")");
  }
  // No '<' or '>' in the line: qinfer chat's tests count its '> ' prompts in the merged output.
  log_info(line, "; QINFER_KERNEL_OPTS=bf16_NAME forces one)");
  return cand[p.pick];
}

// The bf16_dot one-row kernels timed as the exact decode ones are (64 MiB of 4 KiB
// rows, every thread and one, best of 4), on first use of the opt-in: ~0.05 s.
DotRows dot_rows_probe(const KernelTable& t) {
  const int64_t rows = 16384, cols = 2048;
  const auto w = bf16_probe_weights(rows, cols);
  const std::vector<float> x = probe_activations(cols);
  std::vector<float> y(rows);
  const DenseMatrix W = dense_view(WType::BF16, w.get(), rows, cols);
  const DotRows cand[2] = {DotRows::kTiles, DotRows::kSeq};
  const KernelProbe p = probe_kernels(
      2, [&](size_t c) { bf16_dot_product(t, W, x.data(), 1, y.data(), dense_work(W, 1), cand[c]); }, true,
      [&] { flush_from_caches(w.get(), static_cast<size_t>(W.bytes())); });
  const double gb = static_cast<double>(W.bytes()) / 1e9;
  char b[48];
  std::snprintf(b, sizeof b, " %.3f ms", p.all[0] * 1e3);
  std::string line = cat(" (probe, best of 4: tiles", b, " (", probe_rates(p, 0, gb), "),");
  std::snprintf(b, sizeof b, " %.3f ms", p.all[1] * 1e3);
  line += cat(" rows", b, " (", probe_rates(p, 1, gb), "))");
  log_info("kernels ", t.name, ": bf16_dot decode (1 row) uses ", p.pick ? "rows" : "tiles", line);
  return cand[p.pick];
}

DotRows dot_rows_on(const KernelTable& t) {
  static std::atomic<DotRows> choice[3];   // value-initialized: kProbe
  return probed_once(choice[path_index(t)], [&] { return dot_rows_probe(t); });
}

Bf16Kernel bf16_kernel_on(const KernelTable& t, int64_t n) {
  const Bf16Kernel forced = options_state().bf16.load(std::memory_order_relaxed);
  if (forced != Bf16Kernel::kProbe) {
    if (!bf16_available(t, forced))
      fail("kernel option bf16_", bf16_kernel_name(forced), " is not available on kernel path ", t.name,
           " (split needs BF16 dot products: scalar or avx512; widen256 the avx512 path; widen_t0, widen_nopf, "
           "widen_tiled avx2 or avx512; amx the avx512 path on a CPU with AMX-BF16 granted by the kernel)");
    return forced;
  }
  const bool panel = n >= detail::kQ4PanelMin;
  return probed_once(panel ? bf16_choice(t).panel : bf16_choice(t).decode, [&] { return bf16_probe(t, panel); });
}

// How a dense product runs in matmul_batch's shared pass: the table's own
// widening kernel in matvec_rows mode >= 0 (dense_rows_mode), or -1 when a
// BF16 alternative (split, widen256, bf16_dot) must run alone.
Q8Kernel q8_kernel_of(const KernelTable& t, const DenseMatrix& W, int64_t n);  // below

int c12_mode(const KernelTable& t);   // below

int shared_pass_mode(const KernelTable& t, const DenseMatrix& W, int64_t n) {
  if (W.type == WType::Q8 && n == 1 && q8_kernel_of(t, W, 1) == Q8Kernel::kWidenTiled) return detail::kMatvecTiled;
  if (W.type == WType::BF16C) return n == 1 && t.matvec_rows ? c12_mode(t) : 0;
  if (W.type != WType::BF16) return 0;
  if (t.bf16_dot_rows && bf16_dot_flag().load(std::memory_order_relaxed)) return -1;
  return widen_mode(bf16_kernel_on(t, n));
}

// ---- --dense int8: integer or widening (Q8Kernel) ----

// Products of fewer activation rows than this (decode, speculative verify, small
// batches) follow the one-row probe; more (prefill) the panel probe.
constexpr int64_t kQ8FewRows = 8;

// An int8 product on either kernel; the integer one quantizes X first.
void q8_product(const KernelTable& t, Q8Kernel k, const DenseMatrix& W, const float* X, int64_t n, float* Y,
                double work) {
  if (k == Q8Kernel::kWidenTiled && n == 1 && t.matvec_rows)
    return for_rows(W.rows, work, [&](int64_t r0, int64_t r1) { t.matvec_rows(detail::kMatvecTiled, W, X, Y, r0, r1); });
  if (k != Q8Kernel::kInt) return for_rows(W.rows, work, [&](int64_t r0, int64_t r1) { t.dense_rows(W, X, n, Y, r0, r1); });
  const Aligned64 mem(detail::q8_input_bytes(W.cols, n));
  const detail::Q8Input q = detail::quantize_q8_input(X, n, W.cols, mem.data);
  for_rows(W.rows, work, [&](int64_t r0, int64_t r1) { t.q8_int_rows(W, q, Y, r0, r1); });
}

// Per path: the probe's choice for one activation row (2..7 rows follow it: q8_kernel_on)
// and for panels (n >= kQ8FewRows: prefill).
struct Q8Choice {
  std::atomic<Q8Kernel> one{Q8Kernel::kProbe};
  std::atomic<Q8Kernel> panel{Q8Kernel::kProbe};
};
Q8Choice& q8_choice(const KernelTable& t) {
  static Q8Choice c[3];
  return c[path_index(t)];
}

// Times int8 kernels on a rows x 2048 matrix with n activation rows (probe_matrix,
// probe_kernels; with_one: also on one thread) and returns the probe.
constexpr int64_t kQ8ProbeCols = 2048;
KernelProbe q8_time(const KernelTable& t, const std::vector<Q8Kernel>& cand, int64_t rows, int64_t n, bool with_one) {
  const int64_t cols = kQ8ProbeCols;
  const auto w = probe_matrix<int8_t>(rows, cols, "int8", [](uint64_t i) {
    return static_cast<int8_t>(static_cast<int>((i * 40503u) >> 5 & 0xff) - 128);
  });
  DenseMatrix W;
  W.type = WType::Q8;
  W.rows = rows;
  W.cols = cols;
  W.data = w.get();
  W.row_scale.assign(rows, 1.0f / 127);
  const std::vector<float> x = probe_activations(n * cols);
  std::vector<float> y(n * rows);
  return probe_kernels(
      cand.size(), [&](size_t c) { q8_product(t, cand[c], W, x.data(), n, y.data(), dense_work(W, n)); }, with_one,
      [&] {
        if (with_one) flush_from_caches(w.get(), static_cast<size_t>(rows * cols));   // decode: from memory
      });
}

// Decode: the kernels on a 64 MiB matrix of 2048-wide rows (flushed from the caches
// before each run; the scalar path a 2 MiB one) with one activation row, every thread
// and one: ~0.15 s.
Q8Kernel q8_probe(const KernelTable& t) {
  const bool scalar = &t == &detail::scalar_kernels();
  const int64_t rows = scalar ? 1024 : 32768;
  std::vector<Q8Kernel> cand;
  if (t.q8_int_rows) cand.push_back(Q8Kernel::kInt);
  cand.push_back(Q8Kernel::kWiden);
  if (t.matvec_rows) cand.push_back(Q8Kernel::kWidenTiled);
  const KernelProbe p = q8_time(t, cand, rows, 1, true);
  const double gb = static_cast<double>(rows * kQ8ProbeCols) / 1e9;
  std::string buf = " (probe, best of 4:";
  for (size_t c = 0; c < cand.size(); ++c) {
    char b[48];
    std::snprintf(b, sizeof b, "%s %s %.3f ms", c ? "," : "", q8_kernel_name(cand[c]), p.all[c] * 1e3);
    buf += cat(b, " (", probe_rates(p, c, gb), ")");
  }
  buf += ")";
  log_info("kernels ", t.name, ": int8 dense decode (1 row) uses ", q8_kernel_name(cand[p.pick]), buf,
           ", 2-7 rows ", cand[p.pick] == Q8Kernel::kInt ? "int" : "widen",
           "; QINFER_KERNEL_OPTS=q8_int, q8_widen or q8_widen_tiled forces one");
  return cand[p.pick];
}

// Panels (prefill): the integer kernel against fp32 widening on a 2 MiB matrix (in
// L2/L3: the products are compute-bound) with 64 activation rows, every thread: ~20 ms.
Q8Kernel q8_panel_probe(const KernelTable& t) {
  const std::vector<Q8Kernel> cand{Q8Kernel::kInt, Q8Kernel::kWiden};
  const KernelProbe p = q8_time(t, cand, 1024, 64, false);
  char b[96];
  std::snprintf(b, sizeof b, " (probe, best of 4: int %.3f ms, widen %.3f ms)", p.all[0] * 1e3, p.all[1] * 1e3);
  log_info("kernels ", t.name, ": int8 dense panels (prefill) use ", q8_kernel_name(cand[p.pick]), b,
           "; QINFER_KERNEL_OPTS=q8_int or q8_widen forces one");
  return cand[p.pick];
}

Q8Kernel q8_kernel_on(const KernelTable& t, int64_t n) {
  const Q8Kernel forced = options_state().q8.load(std::memory_order_relaxed);
  if (forced == Q8Kernel::kInt && !t.q8_int_rows)
    fail("kernel option q8_int is not available on kernel path ", t.name, " (it needs a byte dot product: avx512's "
         "VNNI, or the scalar twin)");
  if (forced == Q8Kernel::kWidenTiled && !t.matvec_rows)
    fail("kernel option q8_widen_tiled is not available on kernel path ", t.name, " (avx2 or avx512)");
  if (n >= kQ8FewRows) {   // panels: widen_tiled is a one-row kernel
    if (forced != Q8Kernel::kProbe) return forced == Q8Kernel::kInt ? Q8Kernel::kInt : Q8Kernel::kWiden;
    if (!t.q8_int_rows) return Q8Kernel::kWiden;
    return probed_once(q8_choice(t).panel, [&] { return q8_panel_probe(t); });
  }
  if (forced != Q8Kernel::kProbe) return forced;
  if (!t.q8_int_rows && (n != 1 || !t.matvec_rows)) return Q8Kernel::kWiden;  // one candidate
  const Q8Kernel one = probed_once(q8_choice(t).one, [&] { return q8_probe(t); });
  // 2..7 rows (a speculative verify pass) compute each row as one-row decode does:
  // the integer kernel's quantized activations if decode takes it, fp32 widening
  // otherwise, so that verifying a token gives the logits decoding it would have.
  if (n == 1) return one;
  return one == Q8Kernel::kInt ? Q8Kernel::kInt : Q8Kernel::kWiden;
}

// Per path: the probe's layout for one-row GPTQ products.
std::atomic<Q4Kernel>& q4_choice(const KernelTable& t) {
  static std::atomic<Q4Kernel> c[3] = {Q4Kernel::kProbe, Q4Kernel::kProbe, Q4Kernel::kProbe};
  return c[path_index(t)];
}

// One-row GPTQ decode: one tile after another against two side by side, on an 18 MiB
// matrix of 2048-wide rows in huge pages, every thread and one (probe_kernels),
// flushed from the caches before each run, as a layer's experts come from memory
// (a VM's L3 may hold it: the Intel Xeon host reports 480 MiB, and there the
// kernels rank the other way round in cache): ~0.2 s.
Q4Kernel q4_probe(const KernelTable& t) {
  const int64_t rows = 16384, cols = 2048;
  std::unique_ptr<GptqMatrix> W = gptq_probe_matrix(rows, cols);
  const size_t bytes = static_cast<size_t>(W->storage_bytes());
  const ProbeBuffer<unsigned char> store = huge_page_buffer<unsigned char>(bytes, "GPTQ");
  W->move_storage(store.get());
  const std::vector<float> x = probe_activations(cols);
  const Aligned64 mem(detail::q4_input_bytes(*W, 1));
  const detail::Q4Input q = detail::quantize_q4_input(t, *W, x.data(), 1, mem.data);
  std::vector<float> y(rows);
  const Q4Kernel cand[2] = {Q4Kernel::kTiles, Q4Kernel::kPairs};
  const KernelProbe p = probe_kernels(
      2,
      [&](size_t c) {
        for_rows(rows, 0.5 * cols, [&](int64_t r0, int64_t r1) {
          (cand[c] == Q4Kernel::kPairs ? t.gptq_rows_pairs : t.gptq_rows)(*W, q, y.data(), r0, r1);
        });
      },
      true, [&] { flush_from_caches(store.get(), bytes); });
  const double gb = static_cast<double>(W->bytes()) / 1e9;
  char ms[2][16];
  for (int c = 0; c < 2; ++c) std::snprintf(ms[c], sizeof ms[c], "%.3f", p.all[c] * 1e3);
  log_info("kernels ", t.name, ": GPTQ int4 decode (1 row) uses ", q4_kernel_name(cand[p.pick]),
           " (probe, best of 4: tiles ", ms[0], " ms (", probe_rates(p, 0, gb), "), pairs ", ms[1], " ms (",
           probe_rates(p, 1, gb), ")); QINFER_KERNEL_OPTS=q4_tiles or q4_pairs forces one");
  return cand[p.pick];
}

Q4Kernel q4_kernel_on(const KernelTable& t) {
  const Q4Kernel forced = options_state().q4.load(std::memory_order_relaxed);
  if (forced == Q4Kernel::kPairs && !t.gptq_rows_pairs)
    fail("kernel option q4_pairs is not available on kernel path ", t.name, " (avx512 only)");
  if (!t.gptq_rows_pairs) return Q4Kernel::kTiles;
  if (forced != Q4Kernel::kProbe) return forced;
  return probed_once(q4_choice(t), [&] { return q4_probe(t); });
}

// Per path: the probe's kernel for GPTQ products of q4_panel_min or more rows.
std::atomic<Q4Prefill>& q4_prefill_choice(const KernelTable& t) {
  static std::atomic<Q4Prefill> c[3] = {Q4Prefill::kProbe, Q4Prefill::kProbe, Q4Prefill::kProbe};
  return c[path_index(t)];
}

// Prefill-sized GPTQ products: fp32 panels against the integer tiles (activations
// quantized in the timed run, as matmul_batch does) on an expert's 512 x 2048 matrix
// (0.6 MB: in L2/L3, the products are compute-bound) with 64 activation rows, every
// thread: ~20 ms.
Q4Prefill q4_prefill_probe(const KernelTable& t) {
  const int64_t rows = 512, cols = 2048, n = 64;
  std::unique_ptr<GptqMatrix> W = gptq_probe_matrix(rows, cols);
  const std::vector<float> x = probe_activations(n * cols);
  const Aligned64 mem(detail::q4_input_bytes(*W, n));
  std::vector<float> y(n * rows);
  const double work = static_cast<double>(cols) * (0.5 + n);
  const Q4Prefill cand[2] = {Q4Prefill::kPanels, Q4Prefill::kInt};
  const KernelProbe p = probe_kernels(
      2,
      [&](size_t c) {
        if (cand[c] == Q4Prefill::kPanels)
          return for_rows(rows, work, [&](int64_t r0, int64_t r1) { t.gptq_rows_f32(*W, x.data(), n, y.data(), r0, r1); });
        const detail::Q4Input q = detail::quantize_q4_input(t, *W, x.data(), n, mem.data);
        for_rows(rows, work, [&](int64_t r0, int64_t r1) { t.gptq_rows(*W, q, y.data(), r0, r1); });
      },
      false);
  const double gflop = 2.0 * rows * cols * n / 1e9;
  char b[128];
  std::snprintf(b, sizeof b, " (probe, best of 4, 64 rows: panels %.3f ms (%.0f GFLOP/s), int %.3f ms (%.0f GFLOP/s))",
                p.all[0] * 1e3, gflop / p.all[0], p.all[1] * 1e3, gflop / p.all[1]);
  log_info("kernels ", t.name, ": GPTQ int4 products of ", t.q4_panel_min, "+ rows (prefill) use ",
           q4_prefill_name(cand[p.pick]), b, "; QINFER_KERNEL_OPTS=q4_panels or q4_int forces one");
  return cand[p.pick];
}

Q4Prefill q4_prefill_on(const KernelTable& t) {
  const Q4Prefill forced = options_state().q4_prefill.load(std::memory_order_relaxed);
  if (forced != Q4Prefill::kProbe) return forced;
  if (&t == &detail::scalar_kernels()) return Q4Prefill::kPanels;   // the reference keeps its threshold
  return probed_once(q4_prefill_choice(t), [&] { return q4_prefill_probe(t); });
}

// The kernel an int8 matrix's product with n rows runs: the choice for n, except that
// rows wider than the integer path takes are widened.
Q8Kernel q8_kernel_of(const KernelTable& t, const DenseMatrix& W, int64_t n) {
  const Q8Kernel k = q8_kernel_on(t, n);
  return k == Q8Kernel::kInt && W.cols > detail::kQ8IntMaxCols ? Q8Kernel::kWiden : k;
}

bool q8_int_on(const KernelTable& t, const DenseMatrix& W, int64_t n) {
  return W.type == WType::Q8 && q8_kernel_of(t, W, n) == Q8Kernel::kInt;
}

// ---- BF16C (ops/bf16c.h): whether the 12-bit form pays here, and its decode mode ----

struct C12Choice {
  std::atomic<bool> probed{false};
  bool pays = false;
  int mode = detail::kMatvecSeqNta;   // matvec_rows mode of one-row products
};
C12Choice& c12_choice(const KernelTable& t) {
  static C12Choice c[3];
  return c[path_index(t)];
}

// The 64 MiB BF16 decode probe matrix (16384 x 2048, the scalar path 1024 rows) as
// BF16 and as BF16C, one activation row: the BF16 decode kernel (the probe's or the
// forced choice) against BF16C with each prefetch variant, every thread and one,
// best of 4 (probe_kernels), both matrices flushed from the caches before each run:
// 0.6-1.0 s with the encoding and the BF16 probe on a 2-core Intel Xeon (0.46 s on
// the 2-core Zen 4 host before the flush).
void c12_probe(const KernelTable& t, C12Choice& out) {
  const auto start = std::chrono::steady_clock::now();
  const bool scalar = &t == &detail::scalar_kernels();
  const int64_t rows = scalar ? 1024 : 16384, cols = 2048;
  const auto w = bf16_probe_weights(rows, cols);
  const DenseMatrix Wb = dense_view(WType::BF16, w.get(), rows, cols);
  const auto stream = probe_matrix<uint8_t>(rows, bf16c_stream_bytes(1, cols), "BF16C", [](uint64_t) { return 0; });
  const DenseMatrix Wc = dense_to_bf16c(Wb, bf16c_table(Wb), nullptr, stream.get());
  const std::vector<float> x = probe_activations(cols);
  std::vector<float> y(rows);
  const Bf16Kernel plain = bf16_kernel_on(t, 1);
  std::vector<int> modes;   // BF16C candidates (matvec_rows modes; -1: dense_rows)
  if (t.matvec_rows) modes = {detail::kMatvecSeqNta, detail::kMatvecSeqT0, detail::kMatvecSeqNone};
  else modes = {-1};
  const double work = dense_work(Wb, 1);
  const KernelProbe p = probe_kernels(
      1 + modes.size(),
      [&](size_t c) {
        if (c == 0) return bf16_exact_product(t, plain, Wb, x.data(), 1, y.data(), work);
        const int m = modes[c - 1];
        for_rows(rows, work, [&](int64_t r0, int64_t r1) {
          if (m >= 0) t.matvec_rows(m, Wc, x.data(), y.data(), r0, r1);
          else t.dense_rows(Wc, x.data(), 1, y.data(), r0, r1);
        });
      },
      true,
      [&] {
        flush_from_caches(w.get(), static_cast<size_t>(Wb.weight_bytes()));
        flush_from_caches(stream.get(), static_cast<size_t>(Wc.weight_bytes()));
      });
  // The best BF16C variant by probe_kernels' score, whether or not BF16 wins.
  size_t best = 1;
  for (size_t c = 2; c <= modes.size(); ++c)
    if (probe_score(p, c) < probe_score(p, best)) best = c;
  // The 12-bit form pays unless BF16 is more than kBf16cMargin faster: at a near tie
  // it still holds a quarter fewer bytes (resident memory), and a near tie here is
  // the probe's error, not the model's: after clflush this probe reads BF16 at up to
  // 1.7x the rate the 1 GB lm_head streams it (Zen 5, one thread: 38-44 GB/s against
  // 25-26), flattering the kernel with less work per byte, and once called BF16 6%
  // faster where the model ran 5-16% slower with it (docs/PERFORMANCE.md, session 26).
  constexpr double kBf16cMargin = 1.10;
  out.pays = probe_score(p, best) <= kBf16cMargin * probe_score(p, 0);
  out.mode = std::max(modes[best - 1], 0);
  static const char* names[] = {"nta", "t0", "none"};
  const double gb = static_cast<double>(Wb.weight_bytes()) / 1e9;   // BF16 bytes: rates comparable
  std::string line = cat("kernels ", t.name, ": BF16C (12-bit BF16, lossless) ", out.pays ? "pays" : "does not pay",
                         " for decode (probe, best of 4, taken unless BF16 is over 10% faster; BF16-equivalent "
                         "rates: BF16 ", bf16_kernel_name(plain), " ",
                         probe_rates(p, 0, gb));
  for (size_t c = 1; c <= modes.size(); ++c)
    line += cat(", bf16c_", modes[c - 1] >= 0 ? names[modes[c - 1]] : "rows", " ", probe_rates(p, c, gb));
  char took[48];
  std::snprintf(took, sizeof took, "; %.2f s", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  const Bf16cKernel forced = options_state().bf16c.load(std::memory_order_relaxed);
  if (forced != Bf16cKernel::kProbe) line += cat("; variant forced: bf16c_", bf16c_kernel_name(forced));
  log_info(line, took, "; --dense bf16 or bf16c forces the form, QINFER_KERNEL_OPTS=bf16c_nta|t0|none the variant)");
}

// The avx512 and avx2 paths have SIMD BF16C decoders, whose prefetch variant and
// whether they pay the probe decides; the scalar path decodes each block in plain
// code (the twin: correct, several times slower than BF16), so there BF16C never
// pays and decodes rows one after another with the default prefetch.
bool c12_tuned(const KernelTable& t) { return &t != &detail::scalar_kernels(); }

int c12_forced_mode(Bf16cKernel k) {
  switch (k) {
    case Bf16cKernel::kT0: return detail::kMatvecSeqT0;
    case Bf16cKernel::kNone: return detail::kMatvecSeqNone;
    case Bf16cKernel::kNta: return detail::kMatvecSeqNta;
    case Bf16cKernel::kProbe: break;
  }
  return -1;
}

int c12_mode(const KernelTable& t) {
  C12Choice& c = c12_choice(t);
  if (!c12_tuned(t)) return detail::kMatvecSeqNta;
  if (!c.probed.load(std::memory_order_acquire)) {
    static std::mutex probing;
    std::lock_guard<std::mutex> lock(probing);
    if (!c.probed.load(std::memory_order_relaxed)) {
      ProbeTimer timer;
      c12_probe(t, c);
      c.probed.store(true, std::memory_order_release);
    }
  }
  const int forced = c12_forced_mode(options_state().bf16c.load(std::memory_order_relaxed));
  return forced >= 0 ? forced : c.mode;
}

void bf16c_product(const KernelTable& t, const DenseMatrix& W, const float* X, int64_t n, float* Y, double work) {
  const int mode = n == 1 && t.matvec_rows ? c12_mode(t) : 0;
  for_rows(W.rows, work, [&](int64_t r0, int64_t r1) {
    if (mode > 0) t.matvec_rows(mode, W, X, Y, r0, r1);
    else t.dense_rows(W, X, n, Y, r0, r1);
  });
}

}  // namespace

KernelOptions parse_kernel_options(const char* spec) {
  KernelOptions o;
  if (!spec) return o;
  std::string s(spec);
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t end = std::min(s.find(',', pos), s.size());
    const std::string tok = s.substr(pos, end - pos);
    if (tok == "bf16_dot") o.bf16_dot = true;
    else if (tok == "bf16_widen") o.bf16 = Bf16Kernel::kWiden;
    else if (tok == "bf16_widen256") o.bf16 = Bf16Kernel::kWiden256;
    else if (tok == "bf16_widen_t0") o.bf16 = Bf16Kernel::kWidenT0;
    else if (tok == "bf16_widen_nopf") o.bf16 = Bf16Kernel::kWidenNoPf;
    else if (tok == "bf16_widen_tiled") o.bf16 = Bf16Kernel::kWidenTiled;
    else if (tok == "bf16_split") o.bf16 = Bf16Kernel::kSplit;
    else if (tok == "bf16_split3") o.bf16 = Bf16Kernel::kSplit3;
    else if (tok == "bf16_amx") o.bf16 = Bf16Kernel::kAmx;
    else if (tok == "q8_widen") o.q8 = Q8Kernel::kWiden;
    else if (tok == "q8_int") o.q8 = Q8Kernel::kInt;
    else if (tok == "q8_widen_tiled") o.q8 = Q8Kernel::kWidenTiled;
    else if (tok == "q4_tiles") o.q4 = Q4Kernel::kTiles;
    else if (tok == "q4_pairs") o.q4 = Q4Kernel::kPairs;
    else if (tok == "bf16c_nta") o.bf16c = Bf16cKernel::kNta;
    else if (tok == "bf16c_t0") o.bf16c = Bf16cKernel::kT0;
    else if (tok == "bf16c_none") o.bf16c = Bf16cKernel::kNone;
    else if (tok == "q4_panels") o.q4_prefill = Q4Prefill::kPanels;
    else if (tok == "q4_int") o.q4_prefill = Q4Prefill::kInt;
    else if (!tok.empty())
      fail("QINFER_KERNEL_OPTS: unknown option '", tok,
           "' (known: bf16_dot, bf16_widen, bf16_widen_t0, bf16_widen_nopf, bf16_widen_tiled, bf16_widen256, "
           "bf16_split3, bf16_split, bf16_amx, q8_int, q8_widen, q8_widen_tiled, q4_tiles, q4_pairs, q4_panels, "
           "q4_int, bf16c_nta, bf16c_t0, bf16c_none)");
    pos = end + 1;
  }
  return o;
}

const char* bf16_kernel_name(Bf16Kernel k) {
  switch (k) {
    case Bf16Kernel::kProbe: return "probe";
    case Bf16Kernel::kWiden: return "widen";
    case Bf16Kernel::kWiden256: return "widen256";
    case Bf16Kernel::kSplit: return "split";
    case Bf16Kernel::kSplit3: return "split3";
    case Bf16Kernel::kWidenT0: return "widen_t0";
    case Bf16Kernel::kWidenNoPf: return "widen_nopf";
    case Bf16Kernel::kWidenTiled: return "widen_tiled";
    case Bf16Kernel::kAmx: return "amx";
  }
  return "?";
}

const char* q8_kernel_name(Q8Kernel k) {
  switch (k) {
    case Q8Kernel::kProbe: return "probe";
    case Q8Kernel::kInt: return "int";
    case Q8Kernel::kWiden: return "widen";
    case Q8Kernel::kWidenTiled: return "widen_tiled";
  }
  return "?";
}

Bf16Kernel bf16_kernel_for(int64_t n) { return bf16_kernel_on(table(), n); }

bool bf16c_pays() {
  const KernelTable& t = table();
  if (t.bf16_dot_rows && bf16_dot_flag().load(std::memory_order_relaxed)) return false;   // not the widening numerics
  const Bf16Kernel forced = options_state().bf16.load(std::memory_order_relaxed);
  if (forced != Bf16Kernel::kProbe && widen_mode(forced) < 0) return false;   // split, widen256, amx forced
  if (!c12_tuned(t)) return false;
  if (bf16_kernel_on(t, detail::kQ4PanelMin) == Bf16Kernel::kAmx) return false;   // BF16C panels widen: not AMX
  c12_mode(t);
  return c12_choice(t).pays;
}

Q8Kernel q8_kernel_for(int64_t n) { return q8_kernel_on(table(), n); }

Q4Kernel q4_kernel_for_one_row() { return q4_kernel_on(table()); }

Q4Prefill q4_prefill_kernel() { return q4_prefill_on(table()); }

const char* q4_prefill_name(Q4Prefill k) {
  switch (k) {
    case Q4Prefill::kProbe: return "probe";
    case Q4Prefill::kPanels: return "panels";
    case Q4Prefill::kInt: return "int";
  }
  return "?";
}

const char* bf16c_kernel_name(Bf16cKernel k) {
  switch (k) {
    case Bf16cKernel::kProbe: return "probe";
    case Bf16cKernel::kNta: return "nta";
    case Bf16cKernel::kT0: return "t0";
    case Bf16cKernel::kNone: return "none";
  }
  return "?";
}

Bf16cKernel bf16c_kernel_for_one_row() {
  const int m = c12_mode(table());
  for (Bf16cKernel k : {Bf16cKernel::kT0, Bf16cKernel::kNone})
    if (c12_forced_mode(k) == m) return k;
  return Bf16cKernel::kNta;
}

const char* q4_kernel_name(Q4Kernel k) {
  switch (k) {
    case Q4Kernel::kProbe: return "probe";
    case Q4Kernel::kTiles: return "tiles";
    case Q4Kernel::kPairs: return "pairs";
  }
  return "?";
}

std::vector<Bf16Kernel> bf16_kernels_available() {
  std::vector<Bf16Kernel> out;
  for (Bf16Kernel k : {Bf16Kernel::kWiden, Bf16Kernel::kWidenT0, Bf16Kernel::kWidenNoPf, Bf16Kernel::kWidenTiled,
                       Bf16Kernel::kWiden256, Bf16Kernel::kSplit3, Bf16Kernel::kSplit, Bf16Kernel::kAmx})
    if (bf16_available(table(), k)) out.push_back(k);
  return out;
}

void matmul(const DenseMatrix& W, const float* X, int64_t n, float* Y) {
  check_dense(W, "matmul");
  check_io(X, n, Y, "matmul");
  if (n == 0) return;
  const KernelTable& t = table();
  const double work = dense_work(W, n);
  if (W.type == WType::BF16 && t.bf16_dot_rows && bf16_dot_flag().load(std::memory_order_relaxed))
    return bf16_dot_product(t, W, X, n, Y, work);
  if (W.type == WType::BF16) return bf16_exact_product(t, bf16_kernel_on(t, n), W, X, n, Y, work);
  if (W.type == WType::BF16C) return bf16c_product(t, W, X, n, Y, work);
  if (W.type == WType::Q8) return q8_product(t, q8_kernel_of(t, W, n), W, X, n, Y, work);
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

namespace {
// GPTQ prefill panels run on AMX where the BF16 panels do (the probe's or the
// forced choice) and the zero point is uniform (symmetric GPTQ), from kQ4PanelMin
// rows (as measured on Sapphire Rapids; the VNNI integer path's later start,
// kQ4PanelMinVnni, was measured against the fp32 panels only). A forced GPTQ prefill
// kernel (QINFER_KERNEL_OPTS=q4_panels or q4_int) takes these products off AMX.
bool gptq_amx_on(const KernelTable& t, const GptqMatrix& W, int64_t n) {
  return n >= detail::kQ4PanelMin && W.uniform_zero() >= 0 &&
         options_state().q4_prefill.load(std::memory_order_relaxed) == Q4Prefill::kProbe &&
         bf16_kernel_on(t, detail::kQ4PanelMin) == Bf16Kernel::kAmx;
}
int64_t align64(int64_t b) { return (b + 63) / 64 * 64; }
}  // namespace

void matmul_batch(const BatchProduct* items, size_t count) {
  const KernelTable& t = table();
  constexpr int64_t TR = GptqMatrix::kTileRows;
  std::vector<detail::Q4Input> xq(count);
  std::vector<detail::Q8Input> xq8(count);      // dense int8 items on the integer path
  std::vector<char> q8int(count, 0);
  std::vector<char> panel(count, 0);             // GPTQ items on panels (fp32 or AMX), not integer dots
  std::vector<char> amxq(count, 0);              // GPTQ items on AMX panels
  std::vector<detail::AmxQ4Input> xa(count);
  std::vector<char> active(count, 0);            // runs in the shared pass
  std::vector<int> dense_mode(count, 0);         // dense items: dense_rows_mode's mode
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
        amxq[i] = gptq_amx_on(t, *it.gptq, it.n);
        // Prefill-sized items not on AMX: the panels or the integer tiles, as the probe
        // (asked only here, on the first such item) or the option says.
        panel[i] = amxq[i] || (it.n >= t.q4_panel_min && q4_prefill_on(t) == Q4Prefill::kPanels);   // else the integer kernel
        bytes = panel[i] ? (it.gptq->identity_layout() ? 0 : it.n * it.gptq->padded_cols() * int64_t{sizeof(float)})
                         : detail::q4_input_bytes(*it.gptq, it.n);
        if (amxq[i]) bytes = align64(bytes) + align64(detail::amx_q4_input_elems(it.n, it.gptq->padded_cols()) * 2);
        active[i] = 1;
      } else {
        check_dense(*it.dense, "matmul_batch");
        dense_mode[i] = shared_pass_mode(t, *it.dense, it.n);
        if (dense_mode[i] < 0) {
          matmul(*it.dense, it.X, it.n, it.Y);  // BF16 dot-product kernels run alone
        } else {
          rows = (it.dense->rows + kRowBlock - 1) / kRowBlock * kRowBlock;
          work += static_cast<double>(it.dense->cols) * (elem_bytes(it.dense->type) + it.n) * it.dense->rows;
          active[i] = 1;
          if (q8_int_on(t, *it.dense, it.n)) {
            q8int[i] = 1;
            bytes = detail::q8_input_bytes(it.dense->cols, it.n);
            quant += static_cast<double>(it.dense->cols) * it.n;
          }
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
  const Aligned64 scratch(static_cast<size_t>(mem_start[count]));
  unsigned char* mem = scratch.data;
  // Quantize every GPTQ item's activations (in parallel when there is enough).
  // Items fed the same activations (a decode token's copies for its experts)
  // share one quantization.
  std::vector<int64_t> same_as(count, -1);
  for (size_t i = 1; i < count; ++i) {
    const BatchProduct& it = items[i];
    if (!active[i] || !it.gptq || !it.gptq->identity_layout() || panel[i]) continue;
    for (size_t j = 0; j < i; ++j) {
      const BatchProduct& o = items[j];
      // The same rows (an expert's gate and up) or, for one row, equal copies (a decode
      // token's for its experts); prefill items of different rows are not compared.
      if (active[j] && o.gptq && !panel[j] && same_as[j] < 0 && o.gptq->identity_layout() && o.gptq->cols() == it.gptq->cols() &&
          o.n == it.n &&
          (o.X == it.X ||
           (it.n == 1 && std::memcmp(o.X, it.X, static_cast<size_t>(it.gptq->cols()) * sizeof(float)) == 0))) {
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
      if (active[i] && q8int[i]) xq8[i] = detail::quantize_q8_input(it.X, it.n, it.dense->cols, mem + mem_start[i]);
      if (!active[i] || !it.gptq || same_as[i] >= 0) continue;
      if (!panel[i]) {
        xq[i] = detail::quantize_q4_input(t, *it.gptq, it.X, it.n, mem + mem_start[i]);
      } else if (it.gptq->identity_layout()) {
        xp[i] = it.X;
      } else {
        float* buf = reinterpret_cast<float*>(mem + mem_start[i]);
        for (int64_t j = 0; j < it.n; ++j)
          it.gptq->gather_input(it.X + j * it.gptq->cols(), buf + j * it.gptq->padded_cols());
        xp[i] = buf;
      }
      if (amxq[i]) {  // after the fp32 activations in packed order
        const int64_t kp = it.gptq->padded_cols();
        const int64_t skip = it.gptq->identity_layout() ? 0 : align64(it.n * kp * int64_t{sizeof(float)});
        xa[i] = detail::amx_q4_input_view(it.n, kp, reinterpret_cast<uint16_t*>(mem + mem_start[i] + skip));
        detail::pack_amx_q4_rows(xp[i], xa[i], 0, xa[i].np);
      }
    }
  };
  if (count > 1 && quant >= 1 << 16 && !t_in_kernel) parallel_for(static_cast<int64_t>(count), 1, quantize);
  else quantize(0, static_cast<int64_t>(count), 0);
  for (size_t i = 0; i < count; ++i)
    if (same_as[i] >= 0) xq[i] = xq[same_as[i]];
  // One-row GPTQ items (decode) in the probe's layout; the same bits either way.
  bool one_row = false;
  for (size_t i = 0; i < count; ++i) one_row |= active[i] && items[i].gptq && items[i].n == 1;
  const auto q4_one = one_row && q4_kernel_on(t) == Q4Kernel::kPairs ? t.gptq_rows_pairs : t.gptq_rows;
  for_rows(total, work / total, [&](int64_t b, int64_t e) {
    size_t i = std::upper_bound(row_start.begin(), row_start.end(), b) - row_start.begin() - 1;
    for (; i < count && row_start[i] < e; ++i) {
      if (!active[i]) continue;
      const BatchProduct& it = items[i];
      const int64_t lo = std::max(b, row_start[i]) - row_start[i];
      const int64_t hi = std::min(e - row_start[i], it.gptq ? it.gptq->rows() : it.dense->rows);
      if (lo >= hi) continue;
      if (it.gptq && amxq[i]) detail::amx_gptq_rows(*it.gptq, xa[i], it.Y, lo, hi);
      else if (it.gptq && xp[i]) t.gptq_rows_f32(*it.gptq, xp[i], it.n, it.Y, lo, hi);
      else if (it.gptq) (it.n == 1 ? q4_one : t.gptq_rows)(*it.gptq, xq[i], it.Y, lo, hi);
      else if (q8int[i]) t.q8_int_rows(*it.dense, xq8[i], it.Y, lo, hi);
      else dense_rows_mode(t, dense_mode[i], *it.dense, it.X, it.n, it.Y, lo, hi);
    }
  });
}

void set_kernel_options(const KernelOptions& o) {
  options_state().bf16_dot.store(o.bf16_dot);
  options_state().bf16.store(o.bf16);
  options_state().q8.store(o.q8);
  options_state().q4.store(o.q4);
  options_state().bf16c.store(o.bf16c);
  options_state().q4_prefill.store(o.q4_prefill);
}

KernelOptions kernel_options() {
  KernelOptions o;
  o.bf16_dot = options_state().bf16_dot.load();
  o.bf16 = options_state().bf16.load();
  o.q8 = options_state().q8.load();
  o.q4 = options_state().q4.load();
  o.bf16c = options_state().bf16c.load();
  o.q4_prefill = options_state().q4_prefill.load();
  return o;
}

ProbeTime kernel_probe_time() {
  ProbeClock& c = probe_clock();
  std::lock_guard<std::mutex> lock(c.m);
  return {c.seconds, c.count};
}

const char* kernel_path() { return table().name; }

void set_kernel_path(const char* name) {
  table_slot().store(table_by_name(name ? name : ""), std::memory_order_release);
}

}  // namespace qinfer::ops
