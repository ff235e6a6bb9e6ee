// The gated delta rule of one value head (docs/MODEL.md §3 step 6), fp32.
// State S is [dk][dv] row-major (row = key dim). Inputs per token t:
// q[t] (L2-normed and scaled), k[t] (L2-normed), v[t], log-decay g[t] <= 0, beta[t].
// Token t's vectors sit at q + t*q_stride etc.; g and beta at g[t*gb_stride].
// Single-threaded (the model runs one head per task); runtime dispatch picks the
// AVX-512 / AVX2 / scalar implementation with ops::kernel_path().
#pragma once
#include <cstdint>

namespace qinfer::ops {

struct DeltaRuleIO {
  int64_t T = 0, dk = 0, dv = 0;
  const float* q = nullptr; int64_t q_stride = 0;
  const float* k = nullptr; int64_t k_stride = 0;
  const float* v = nullptr; int64_t v_stride = 0;
  const float* g = nullptr; const float* beta = nullptr; int64_t gb_stride = 1;
  float* o = nullptr; int64_t o_stride = 0;  // output [T][dv]
  float* S = nullptr;                        // state [dk][dv], updated in place
  // Out of place (recurrent form): the state before token 0 is read from S_in (left
  // as it is) and the state after each token written to S; the same bits as copying
  // S_in to S and running in place. Null or equal to S: in place.
  const float* S_in = nullptr;
};

// Token by token: S <- e^g S; u = beta (v - Sᵀk); S <- S + k uᵀ; o = Sᵀq.
void delta_rule_recurrent(const DeltaRuleIO& io);

// Chunked (UT-transform) form with chunk size C (the reference uses 64):
// equal to the recurrent form up to fp32 rounding.
void delta_rule_chunked(const DeltaRuleIO& io, int64_t C = 64);

}  // namespace qinfer::ops
