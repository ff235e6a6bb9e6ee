// Internal: one table of sequence kernels (attention core, delta rule, causal
// conv + SiLU, exp) per instruction set, picked with ops::kernel_path() so that
// QINFER_KERNELS / set_kernel_path() switch it together with the matrix kernels.
// The SIMD tables come from seq_kernels_avx512.cc / seq_kernels_avx2.cc (one
// implementation in the *_simd.h headers, compiled per ISA); the scalar table
// holds plain reference twins. Tests call a table directly (seq_kernels_for).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/attention_kernels.h"
#include "ops/delta_rule.h"

namespace qinfer::ops::detail {

// Partial attention result of one key range, per item i (see attend below):
// m[i] = max score, l[i] = Σ e^{s-m}, acc[i*head_dim + d] = Σ e^{s-m} v[d].
// An item that sees no key of the range gets m = -inf, l = 0, acc = 0.
struct AttnPartial {
  float* m = nullptr;
  float* l = nullptr;
  float* acc = nullptr;
};

constexpr int64_t kAttnKeyBlock = 64;  // keys per online-softmax step
constexpr int64_t kAttnItemPad = 4;    // items padded to a multiple of this
constexpr int64_t kAttnDimPad = 16;    // head_dim padded to a multiple of this in scratch

inline int64_t attn_round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// Scratch floats the SIMD attend needs for `items` query items.
inline int64_t attend_work_floats(int64_t items, int64_t head_dim) {
  const int64_t ni = attn_round_up(items, kAttnItemPad), hdp = attn_round_up(head_dim, kAttnDimPad);
  return 2 * ni * hdp + ni * kAttnKeyBlock + 2 * ni + 2 * kAttnKeyBlock * hdp;
}

// Keys and values of one kv head packed for the long-prefill path (ops::attention
// packs them once per call, for every query tile of the sequence): keys in blocks
// of kAttnKeyBlock, each block transposed (key p = b*kAttnKeyBlock + j, dim d at
// kt[(b * head_dim + d) * kAttnKeyBlock + j]); values row-major with the row
// stride attn_round_up(head_dim, kAttnDimPad) (key p, dim d at v[p * stride + d]).
// Zero padded: keys up to a whole block, value rows up to the stride.
struct AttnPackedKv {
  const float* kt = nullptr;
  const float* v = nullptr;
};

constexpr int64_t kAttnPackedItemPad = 12;   // items padded to a multiple of this on the packed path

// Scratch floats attend_packed needs for `items` query items.
inline int64_t attend_packed_work_floats(int64_t items, int64_t head_dim) {
  const int64_t ni = attn_round_up(items, kAttnPackedItemPad), hdp = attn_round_up(head_dim, kAttnDimPad);
  return 2 * ni * hdp + ni * kAttnKeyBlock + 2 * ni;
}

// Scratch floats the delta rule needs (chunk size C; C = 0 for the recurrent form).
inline int64_t delta_work_floats(int64_t dk, int64_t dv, int64_t C) {
  if (C <= 0) return 2 * dv;
  return 2 * C + 3 * C * dv + 2 * C * C + 2 * C * dk;
}

struct SeqKernelTable {
  const char* name;
  void (*vexp)(const float* x, int64_t n, float* y);
  // Items are query rows [t0, t1) x heads [h0, h1) of one kv group, item
  // i = (t - t0) * (h1 - h0) + (h - h0); keys [k0, min(k1, pos[t] + 1)).
  // part == nullptr: the normalised result goes to seq.out (every item must see
  // at least one key). work: attend_work_floats(items, head_dim) floats.
  void (*attend)(const AttentionShape& s, const AttentionSeq& seq, int64_t t0, int64_t t1, int64_t h0, int64_t h1,
                 int64_t k0, int64_t k1, const AttnPartial* part, float* work);
  // The same on packed keys/values of the items' kv group (seq.k / seq.v unused):
  // k0 a multiple of kAttnKeyBlock, every key below max(pos) + 1 of the items
  // packed. Query tiles: a register-blocked q kᵀ (items x keys of a block, the
  // keys as vectors) and p·V. work: attend_packed_work_floats(items, head_dim).
  void (*attend_packed)(const AttentionShape& s, const AttentionSeq& seq, const AttnPackedKv& kv, int64_t t0,
                        int64_t t1, int64_t h0, int64_t h1, int64_t k0, int64_t k1, const AttnPartial* part,
                        float* work);
  // work: delta_work_floats(dk, dv, 0) / (dk, dv, C) floats.
  void (*delta_recurrent)(const DeltaRuleIO& io, float* work);
  void (*delta_chunked)(const DeltaRuleIO& io, int64_t C, float* work);
  void (*conv_silu)(const float* const* x, int64_t K, const float* w, int64_t conv_dim, int64_t c0, int64_t c1,
                    float* o);
};

const SeqKernelTable& seq_scalar_kernels();
const SeqKernelTable& seq_avx2_kernels();    // only when the CPU has avx2+fma+f16c
const SeqKernelTable& seq_avx512_kernels();  // only when the CPU has avx512f/bw/vl/dq and the avx2 set

// The table for ops::kernel_path().
const SeqKernelTable& seq_kernels();
// The table of a path by name, or nullptr when this CPU cannot run it; throws
// qinfer::Error for an unknown name. seq_kernel_paths(): the ones it can run.
const SeqKernelTable* seq_kernels_for(const std::string& name);
std::vector<std::string> seq_kernel_paths();

// The scalar twins (plain reference C++).
void vexp_scalar(const float* x, int64_t n, float* y);
void attend_scalar(const AttentionShape& s, const AttentionSeq& seq, int64_t t0, int64_t t1, int64_t h0, int64_t h1,
                   int64_t k0, int64_t k1, const AttnPartial* part, float* work);
void attend_packed_scalar(const AttentionShape& s, const AttentionSeq& seq, const AttnPackedKv& kv, int64_t t0,
                          int64_t t1, int64_t h0, int64_t h1, int64_t k0, int64_t k1, const AttnPartial* part,
                          float* work);
void delta_recurrent_scalar(const DeltaRuleIO& io, float* work);
void delta_chunked_scalar(const DeltaRuleIO& io, int64_t C, float* work);
void conv_silu_scalar(const float* const* x, int64_t K, const float* w, int64_t conv_dim, int64_t c0, int64_t c1,
                      float* o);

// ops::attention with a given table (tests and benchmarks).
void attention_with(const SeqKernelTable& kt, const AttentionShape& shape, const AttentionSeq* seqs, size_t n_seqs,
                    const AttentionOptions& opt);

}  // namespace qinfer::ops::detail
