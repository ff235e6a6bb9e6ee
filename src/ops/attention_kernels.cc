// ops::attention: argument checks, the task list (query tiles x kv groups, and
// for decode the keys split into ranges: flash-decoding), the threads, and the
// merge of split results. The per-ISA attention core is SeqKernelTable::attend.
#include "ops/attention_kernels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <vector>

#include "ops/seq_kernel_table.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace qinfer::ops {
namespace detail {
namespace {

constexpr int64_t kMinSplitKeys = 512;   // keys per split range, at least

void check(const AttentionShape& s, const AttentionSeq* seqs, size_t n, const AttentionOptions& opt) {
  if (s.heads <= 0 || s.kv_heads <= 0 || s.heads % s.kv_heads != 0)
    fail("attention: heads (", s.heads, ") must be a positive multiple of kv_heads (", s.kv_heads, ")");
  if (s.head_dim <= 0) fail("attention: head_dim must be positive, got ", s.head_dim);
  if (s.q_stride < s.heads * s.head_dim || s.out_stride < s.heads * s.head_dim)
    fail("attention: q_stride ", s.q_stride, " / out_stride ", s.out_stride, " shorter than heads * head_dim = ",
         s.heads * s.head_dim);
  if (opt.max_splits < 0) fail("attention: max_splits must be >= 0, got ", opt.max_splits);
  if (opt.tile_rows <= 0) fail("attention: tile_rows must be positive, got ", opt.tile_rows);
  if (opt.pack < 0 || opt.pack > 2) fail("attention: pack must be 0, 1 or 2, got ", opt.pack);
  if (opt.pack_items <= 0) fail("attention: pack_items must be positive, got ", opt.pack_items);
  if (n > 0 && !seqs) fail("attention: null sequence list");
  for (size_t i = 0; i < n; ++i) {
    const AttentionSeq& q = seqs[i];
    if (q.rows < 0) fail("attention: sequence ", i, " has negative rows ", q.rows);
    if (q.rows == 0) continue;
    if (!q.q || !q.out || !q.pos || !q.k.blocks || !q.v.blocks)
      fail("attention: sequence ", i, " has a null q, out, pos, k or v");
    // Rows and heads must not overlap: heads side by side in each row, or head-major blocks.
    auto fits = [&](const KvRows& r) {
      if (r.block_rows <= 0 || r.row_stride < s.head_dim || r.head_stride < s.head_dim) return false;
      return r.row_stride >= s.kv_heads * r.head_stride || r.head_stride >= r.block_rows * r.row_stride;
    };
    if (!fits(q.k) || !fits(q.v))
      fail("attention: sequence ", i, " has bad key/value row blocks (block_rows ", q.k.block_rows, "/",
           q.v.block_rows, ", row_stride ", q.k.row_stride, "/", q.v.row_stride, ", head_stride ", q.k.head_stride,
           "/", q.v.head_stride, ")");
    for (int64_t t = 0; t < q.rows; ++t)
      if (q.pos[t] < 0) fail("attention: sequence ", i, " row ", t, " has negative position ", q.pos[t]);
  }
}

struct Task {
  size_t seq;
  int64_t t0, t1, h0, h1, k0, k1;
  int64_t part = -1;   // offset of this task's partial result in the split buffer, or -1
  double work = 0;
};

struct Merge {
  size_t seq;
  int64_t t0, t1, h0, h1, splits;
  int64_t part;        // offset of split 0; split s at part + s * stride
  int64_t stride;
};

float* thread_scratch(int64_t n) {
  thread_local std::vector<float> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(n);
  return buf.data();
}

AttnPartial partial_at(float* buf, int64_t off, int64_t items) {
  return {buf + off, buf + off + items, buf + off + 2 * items};
}

}  // namespace

void attention_with(const SeqKernelTable& kt, const AttentionShape& s, const AttentionSeq* seqs, size_t n,
                    const AttentionOptions& opt) {
  check(s, seqs, n, opt);
  const int64_t group = s.heads / s.kv_heads, hd = s.head_dim, hdp = attn_round_up(hd, kAttnDimPad);
  const int64_t threads = ThreadPool::global().size();

  // Query tiles, and how long their key ranges are. A packed sequence (long
  // prefill) gets larger tiles and its keys/values copied head-contiguous.
  struct Tile { size_t seq; int64_t t0, t1, keys; };
  struct Packed { int64_t off = -1, keys = 0, blocks = 0; };   // floats offset, keys stored, blocks of kKB
  std::vector<Tile> tiles;
  std::vector<size_t> first_tile(n + 1, 0);
  std::vector<Packed> packed(n);
  int64_t packed_floats = 0;
  for (size_t i = 0; i < n; ++i) {
    first_tile[i] = tiles.size();
    const AttentionSeq& q = seqs[i];
    const bool pack = q.rows > 0 && (opt.pack == 2 || (opt.pack == 0 && q.rows * group >= 2 * opt.pack_items));
    const int64_t tr = pack ? std::max<int64_t>(1, opt.pack_items / group) : opt.tile_rows;
    int64_t kmax = 0;
    for (int64_t t0 = 0; t0 < q.rows; t0 += tr) {
      const int64_t t1 = std::min(q.rows, t0 + tr);
      int64_t keys = 0;
      for (int64_t t = t0; t < t1; ++t) keys = std::max(keys, q.pos[t] + 1);
      tiles.push_back({i, t0, t1, keys});
      kmax = std::max(kmax, keys);
    }
    if (pack) {
      packed[i] = {packed_floats, kmax, (kmax + kAttnKeyBlock - 1) / kAttnKeyBlock};
      packed_floats += s.kv_heads * packed[i].blocks * kAttnKeyBlock * (hd + hdp);
    }
  }
  first_tile[n] = tiles.size();
  const int64_t base = static_cast<int64_t>(tiles.size()) * s.kv_heads;   // tasks without splitting
  if (base == 0) return;

  // Pack: per sequence and kv group, the transposed key blocks, then the value rows.
  std::unique_ptr<float[]> pk(packed_floats > 0 ? new float[packed_floats] : nullptr);
  auto packed_kv = [&](size_t i, int64_t g) {
    const Packed& P = packed[i];
    const float* kt_base = pk.get() + P.off + g * P.blocks * kAttnKeyBlock * (hd + hdp);
    return AttnPackedKv{kt_base, kt_base + P.blocks * kAttnKeyBlock * hd};
  };
  if (packed_floats > 0) {
    struct Unit { size_t seq; int64_t g, b; };
    std::vector<Unit> units;
    for (size_t i = 0; i < n; ++i)
      for (int64_t g = 0; g < s.kv_heads && packed[i].off >= 0; ++g)
        for (int64_t b = 0; b < packed[i].blocks; ++b) units.push_back({i, g, b});
    parallel_for(static_cast<int64_t>(units.size()), 4, [&](int64_t u0, int64_t u1, int) {
      for (int64_t u = u0; u < u1; ++u) {
        const Unit& un = units[u];
        const AttentionSeq& q = seqs[un.seq];
        const AttnPackedKv kv = packed_kv(un.seq, un.g);
        float* kt_dst = const_cast<float*>(kv.kt) + un.b * hd * kAttnKeyBlock;
        for (int64_t j = 0; j < kAttnKeyBlock; ++j) {
          const int64_t p = un.b * kAttnKeyBlock + j;
          float* v_dst = const_cast<float*>(kv.v) + p * hdp;
          if (p < packed[un.seq].keys) {
            const float* ks = q.k.at(p, un.g);
            const float* vs = q.v.at(p, un.g);
            for (int64_t d = 0; d < hd; ++d) kt_dst[d * kAttnKeyBlock + j] = ks[d];
            std::copy(vs, vs + hd, v_dst);
          } else {
            for (int64_t d = 0; d < hd; ++d) kt_dst[d * kAttnKeyBlock + j] = 0.0f;
            std::fill(v_dst, v_dst + hd, 0.0f);
          }
          std::fill(v_dst + hd, v_dst + hdp, 0.0f);
        }
      }
    });
  }

  std::vector<Task> tasks;
  std::vector<Merge> merges;
  int64_t part_floats = 0;
  auto emit = [&](const Tile& tl, int64_t g) {
    const int64_t items_group = (tl.t1 - tl.t0) * group;
    // Split-K only when the tiles alone cannot keep the threads busy.
    int64_t splits = opt.max_splits;
    if (splits == 0) {
      splits = base < 2 * threads ? std::min((2 * threads + base - 1) / base, tl.keys / kMinSplitKeys) : 1;
      splits = std::max<int64_t>(1, splits);
    }
    const int64_t h0 = g * group, h1 = h0 + group;
    if (splits > 1) {
      const int64_t per = attn_round_up((tl.keys + splits - 1) / splits, kAttnKeyBlock);
      const int64_t ns = (tl.keys + per - 1) / per;
      const int64_t stride = items_group * (2 + hd);
      merges.push_back({tl.seq, tl.t0, tl.t1, h0, h1, ns, part_floats, stride});
      for (int64_t sp = 0; sp < ns; ++sp) {
        const int64_t k0 = sp * per, k1 = std::min(tl.keys, k0 + per);
        tasks.push_back({tl.seq, tl.t0, tl.t1, h0, h1, k0, k1, part_floats + sp * stride,
                         double(items_group) * (k1 - k0)});
      }
      part_floats += ns * stride;
    } else {
      // Few tasks over a short context: heads of the group spread over threads.
      const int64_t chunks = base < threads ? std::min(group, (threads + base - 1) / base) : 1;
      const int64_t per = (group + chunks - 1) / chunks;
      for (int64_t a = h0; a < h1; a += per) {
        const int64_t b = std::min(h1, a + per);
        tasks.push_back({tl.seq, tl.t0, tl.t1, a, b, 0, tl.keys, -1, double((tl.t1 - tl.t0) * (b - a)) * tl.keys});
      }
    }
  };
  // A packed sequence goes kv group by kv group (the threads share one group's
  // keys and values in cache), the others tile by tile.
  for (size_t i = 0; i < n; ++i) {
    if (packed[i].off >= 0) {
      for (int64_t g = 0; g < s.kv_heads; ++g)
        for (size_t t = first_tile[i]; t < first_tile[i + 1]; ++t) emit(tiles[t], g);
    } else {
      for (size_t t = first_tile[i]; t < first_tile[i + 1]; ++t)
        for (int64_t g = 0; g < s.kv_heads; ++g) emit(tiles[t], g);
    }
  }
  // Longest first; threads take the next task from a shared counter.
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.work > b.work; });
  std::vector<float> parts(part_floats);
  std::atomic<size_t> next{0};
  const int64_t workers = std::min<int64_t>(threads, static_cast<int64_t>(tasks.size()));
  parallel_for(workers, 1, [&](int64_t, int64_t, int) {
    for (size_t it; (it = next.fetch_add(1, std::memory_order_relaxed)) < tasks.size();) {
      const Task& tk = tasks[it];
      const int64_t items = (tk.t1 - tk.t0) * (tk.h1 - tk.h0);
      AttnPartial p;
      if (tk.part >= 0) p = partial_at(parts.data(), tk.part, items);
      const AttnPartial* pp = tk.part >= 0 ? &p : nullptr;
      if (packed[tk.seq].off >= 0) {
        float* work = thread_scratch(attend_packed_work_floats(items, hd));
        kt.attend_packed(s, seqs[tk.seq], packed_kv(tk.seq, tk.h0 / group), tk.t0, tk.t1, tk.h0, tk.h1, tk.k0, tk.k1,
                         pp, work);
      } else {
        float* work = thread_scratch(attend_work_floats(items, hd));
        kt.attend(s, seqs[tk.seq], tk.t0, tk.t1, tk.h0, tk.h1, tk.k0, tk.k1, pp, work);
      }
    }
  });

  // Merge the key ranges: weights e^{m_s - M} with M the largest of the maxima.
  for (const Merge& mg : merges) {
    const AttentionSeq& seq = seqs[mg.seq];
    const int64_t nh = mg.h1 - mg.h0, items = (mg.t1 - mg.t0) * nh;
    for (int64_t i = 0; i < items; ++i) {
      float M = -INFINITY;
      for (int64_t sp = 0; sp < mg.splits; ++sp) M = std::max(M, parts[mg.part + sp * mg.stride + i]);
      const int64_t t = mg.t0 + i / nh, h = mg.h0 + i % nh;
      float* o = seq.out + t * s.out_stride + h * hd;
      std::fill(o, o + hd, 0.0f);
      float l = 0.0f;
      for (int64_t sp = 0; sp < mg.splits; ++sp) {
        const AttnPartial p = partial_at(parts.data(), mg.part + sp * mg.stride, items);
        if (p.l[i] == 0.0f) continue;
        const float w = std::exp(p.m[i] - M);
        l += w * p.l[i];
        const float* acc = p.acc + i * hd;
        for (int64_t d = 0; d < hd; ++d) o[d] += w * acc[d];
      }
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      for (int64_t d = 0; d < hd; ++d) o[d] *= inv;
    }
  }
}

}  // namespace detail

void attention(const AttentionShape& shape, const AttentionSeq* seqs, size_t n_seqs, const AttentionOptions& opt) {
  detail::attention_with(detail::seq_kernels(), shape, seqs, n_seqs, opt);
}

}  // namespace qinfer::ops
