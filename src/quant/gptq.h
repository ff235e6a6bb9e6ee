// The GPTQ step for one linear module, as GPTQModel (5.7.x, quantization/gptq.py,
// quantizer.py, gar.py) runs it (the method: docs/MODEL.md §8), with every quirk it has:
//   - per-row group scale/zero from GPTQModel's Quantizer (sym: zero 2^(bits-1), the
//     all-non-negative row keeps xmin = 0), round half to even;
//   - dead inputs (diag H == 0): H[d][d] = 1, W[:, d] = 0;
//   - act_group_aware (GAR) column order, or desc_act order;
//   - U = upper Cholesky factor of (H + λI)⁻¹, λ = damp · mean(diag H), damp
//     ladder +damp_auto_increment on failure, then six diagonal-floor rounds;
//   - blocked column loop (block 128) whose group parameters come from the
//     weights as they stood at the start of the block;
//   - RTN (the failsafe) with the same Quantizer, no Hessian, natural order.
// Weights W are [N rows = outputs][K cols = inputs], fp32. S = Σ xᵀx over the
// calibration rows (unnormalised; H = 2 S / n).
#pragma once
#include <cstdint>
#include <vector>

#include "io/gptq.h"

namespace qinfer::quant {

struct QuantSpec {
  int bits = 4;
  int group_size = 32;
  bool sym = true;
  bool desc_act = false;
  bool act_group_aware = true;   // only when desc_act is false
  double damp_percent = 0.05;
  double damp_auto_increment = 0.01;
  int block_size = 128;
  // false: the factor in fp32 on ops::matmul (ops/linalg.h) and the column loop's
  // trailing updates as one ops::matmul per block (all rows at once); true: the
  // scalar twins the tests compare them with (double-precision factor, each row's
  // loop on its own with plain fp32 updates).
  bool reference_impl = false;
  int maxq() const { return (1 << bits) - 1; }
};

struct GroupParams {
  float scale = 1.0f;
  float zero = 0.0f;
};

// GPTQModel Quantizer.find_params for one row over n values.
GroupParams find_params(const float* x, int64_t n, const QuantSpec& s);
// clamp(rint(w / scale) + zero, 0, maxq): the code of w.
int quantize_code(float w, const GroupParams& p, int maxq);
inline float dequantize_code(int q, const GroupParams& p) { return p.scale * (static_cast<float>(q) - p.zero); }

// GAR order: columns of each group by diag descending (stable), groups by their
// max diag descending (stable). perm[new] = old; group_order[new group] = old group.
std::vector<int> gar_permutation(const float* diag, int64_t K, int group_size, std::vector<int>* group_order);

// The Hessian of one module made ready for the column loop (shared by modules
// with the same inputs, e.g. an expert's gate_proj and up_proj).
struct PreparedHessian {
  int64_t K = 0;
  int64_t nsamples = 0;
  std::vector<int> perm;          // visiting order (perm[new] = old); identity when no reordering
  std::vector<int> group_order;   // GAR: old group of each permuted group
  std::vector<char> dead;         // [K] input never non-zero
  std::vector<float> U;           // [K][K] upper factor of (H + λI)⁻¹ in permuted order; empty: none found
  double damp = 0.0;              // the damp that worked
};

// Upper factor U with UᵀU = (H + damp·mean(diag H)·I)⁻¹ (H [K][K] symmetric,
// double). Tries the damp ladder, then the diagonal-floor rounds. Returns false
// (U untouched) when nothing works. Not from inside a parallel_for.
bool inverse_hessian_factor(const std::vector<double>& H, int64_t K, const QuantSpec& s, std::vector<float>* U,
                            double* damp_used);

// S [K][K] (Σ xᵀx), nsamples rows: H = 2S/n, dead fix, order, factor.
PreparedHessian prepare_hessian(const float* S, int64_t K, int64_t nsamples, const QuantSpec& s);

struct Quantized {
  GptqLinear w;                 // codes, fp32 scales, true zeros; g_idx empty unless desc_act
  double avg_loss = 0.0;        // GPTQModel's logged loss (Σ (w-q)²/d² / 2 / n)
  double damp = 0.0;
  bool failsafe = false;        // RTN path
  bool no_inverse = false;      // GPTQ path without a usable factor (plain rounding)
};

Quantized quantize_rtn(const float* W, int64_t N, int64_t K, const QuantSpec& s);
Quantized quantize_gptq(const float* W, int64_t N, int64_t K, const PreparedHessian& h, const QuantSpec& s);

// Σ over the calibration rows of ||x (W − Q)ᵀ||² = Σ_r Δ_r S Δ_rᵀ (Δ S as one fp32
// ops::matmul, summed in double). Not from inside a parallel_for.
double output_error(const float* W, const GptqLinear& q, const float* S);

}  // namespace qinfer::quant
