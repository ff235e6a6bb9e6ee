#include "quant/gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/matmul.h"
#include "ops/linalg.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace qinfer::quant {

GroupParams find_params(const float* x, int64_t n, const QuantSpec& s) {
  float xmin = 0.0f, xmax = 0.0f;   // min(min(x), 0), max(max(x), 0)
  for (int64_t i = 0; i < n; ++i) {
    xmin = std::min(xmin, x[i]);
    xmax = std::max(xmax, x[i]);
  }
  if (s.sym) {
    xmax = std::max(std::fabs(xmin), xmax);
    if (xmin < 0) xmin = -xmax;   // an all-non-negative row keeps xmin = 0 (GPTQModel quirk)
  }
  if (xmin == 0.0f && xmax == 0.0f) {
    xmin = -1.0f;
    xmax = 1.0f;
  }
  GroupParams p;
  const int maxq = s.maxq();
  p.scale = (xmax - xmin) / static_cast<float>(maxq);
  p.zero = s.sym ? static_cast<float>((maxq + 1) / 2) : std::nearbyint(-xmin / p.scale);
  return p;
}

int quantize_code(float w, const GroupParams& p, int maxq) {
  const float q = std::nearbyint(w / p.scale) + p.zero;   // round half to even, like torch.round
  return static_cast<int>(std::clamp(q, 0.0f, static_cast<float>(maxq)));
}

std::vector<int> gar_permutation(const float* diag, int64_t K, int G, std::vector<int>* group_order) {
  if (G <= 0 || K % G) fail("act_group_aware: group size ", G, " does not divide ", K, " inputs");
  const int64_t ng = K / G;
  std::vector<int> local(K);
  std::vector<float> score(ng);
  for (int64_t g = 0; g < ng; ++g) {
    int* l = local.data() + g * G;
    std::iota(l, l + G, static_cast<int>(g * G));
    std::stable_sort(l, l + G, [&](int a, int b) { return diag[a] > diag[b]; });
    score[g] = diag[l[0]];
  }
  std::vector<int> order(ng);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return score[a] > score[b]; });
  std::vector<int> perm;
  perm.reserve(K);
  for (int g : order) perm.insert(perm.end(), local.begin() + int64_t{g} * G, local.begin() + (int64_t{g} + 1) * G);
  if (group_order) *group_order = order;
  return perm;
}

namespace {

// U with UᵀU = A⁻¹ (ops/linalg.h): the fp32 blocked factor, or its double scalar twin
// when QuantSpec::reference_impl is set.
bool upper_inverse_factor(const std::vector<double>& A, int64_t K, bool reference, std::vector<float>* Uout) {
  if (reference) {
    std::vector<double> U(A.size());
    if (!ops::spd_inverse_upper_factor_reference(A.data(), K, U.data())) return false;
    Uout->assign(U.begin(), U.end());
    return true;
  }
  const std::vector<float> Af(A.begin(), A.end());
  std::vector<float> U(Af.size());
  if (!ops::spd_inverse_upper_factor(Af.data(), K, U.data())) return false;
  *Uout = std::move(U);
  return true;
}

}  // namespace

bool inverse_hessian_factor(const std::vector<double>& H, int64_t K, const QuantSpec& s, std::vector<float>* U,
                            double* damp_used) {
  std::vector<double> orig(K);
  for (int64_t k = 0; k < K; ++k) orig[k] = H[k * K + k];
  std::vector<double> A(H);
  auto ladder = [&](const std::vector<double>& diag) {
    double mean = 0.0;
    for (double d : diag) mean += d;
    mean /= static_cast<double>(K);
    for (double damp = s.damp_percent; damp > 0.0 && damp < 1.0; damp += s.damp_auto_increment) {
      for (int64_t k = 0; k < K; ++k) A[k * K + k] = diag[k] + damp * mean;
      if (upper_inverse_factor(A, K, s.reference_impl, U)) {
        *damp_used = damp;
        return true;
      }
      if (s.damp_auto_increment <= 0.0) break;
    }
    return false;
  };
  if (ladder(orig)) return true;
  double maxabs = 0.0;
  for (double d : orig) maxabs = std::max(maxabs, std::fabs(d));
  for (int round = 1; round <= 6; ++round) {   // diagonal floor rounds
    const double f = 1e-6 * maxabs * std::pow(10.0, round - 1);
    std::vector<double> diag(K);
    for (int64_t k = 0; k < K; ++k) diag[k] = std::max(orig[k] + f, f);
    if (ladder(diag)) return true;
  }
  return false;
}

PreparedHessian prepare_hessian(const float* S, int64_t K, int64_t nsamples, const QuantSpec& s) {
  PreparedHessian h;
  h.K = K;
  h.nsamples = nsamples;
  const double scale = nsamples > 0 ? 2.0 / static_cast<double>(nsamples) : 0.0;
  h.dead.assign(K, 0);
  std::vector<float> diag(K);
  for (int64_t k = 0; k < K; ++k) {
    diag[k] = static_cast<float>(scale * S[k * K + k]);
    if (diag[k] == 0.0f) {
      h.dead[k] = 1;
      diag[k] = 1.0f;
    }
  }
  h.perm.resize(K);
  std::iota(h.perm.begin(), h.perm.end(), 0);
  if (s.desc_act) {
    std::stable_sort(h.perm.begin(), h.perm.end(), [&](int a, int b) { return diag[a] > diag[b]; });
  } else if (s.act_group_aware) {
    h.perm = gar_permutation(diag.data(), K, s.group_size, &h.group_order);
  }
  std::vector<double> Hp(static_cast<size_t>(K * K));
  for (int64_t i = 0; i < K; ++i) {
    const int64_t pi = h.perm[i];
    for (int64_t j = 0; j < K; ++j) {
      const int64_t pj = h.perm[j];
      Hp[i * K + j] = pi == pj ? static_cast<double>(diag[pi]) : scale * S[pi * K + pj];
    }
  }
  if (!inverse_hessian_factor(Hp, K, s, &h.U, &h.damp)) {
    h.U.clear();
    h.damp = 1.0;
  }
  return h;
}

namespace {

GptqLinear empty_linear(int64_t N, int64_t K, const QuantSpec& s) {
  if (s.group_size <= 0 || K % s.group_size)
    fail("group size ", s.group_size, " does not divide the input size ", K);
  GptqLinear w;
  w.rows = N;
  w.cols = K;
  w.bits = s.bits;
  w.group_size = s.group_size;
  w.num_groups = K / s.group_size;
  w.q.assign(static_cast<size_t>(N * K), 0);
  w.scale.assign(static_cast<size_t>(N * w.num_groups), 0.0f);
  w.zero.assign(static_cast<size_t>(N * w.num_groups), 0);
  return w;
}

}  // namespace

Quantized quantize_rtn(const float* W, int64_t N, int64_t K, const QuantSpec& s) {
  Quantized out;
  out.failsafe = true;
  out.w = empty_linear(N, K, s);
  GptqLinear& q = out.w;
  const int G = s.group_size, maxq = s.maxq();
  parallel_for(N, 16, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t g = 0; g < q.num_groups; ++g) {
        const float* x = W + r * K + g * G;
        const GroupParams p = find_params(x, G, s);
        q.scale[r * q.num_groups + g] = p.scale;
        q.zero[r * q.num_groups + g] = static_cast<uint8_t>(p.zero);
        for (int j = 0; j < G; ++j) q.q[r * K + g * G + j] = static_cast<uint8_t>(quantize_code(x[j], p, maxq));
      }
  });
  return out;
}

namespace {

// The in-block part of the column loop for one row. w: the row in visiting order
// as it stood at the start of block [i1, i2) (the group parameters of the groups
// starting in the block come from it); the block's columns are quantized one by
// one in a copy w1, each column's scaled error err[j] spread over the block's
// later columns. Codes go to codes[c], group parameters to gp[c / G]. Returns the
// loss Σ (w − q)² / d². Without U (no factor): plain rounding, err untouched.
double quantize_block_row(const float* w, int64_t i1, int64_t i2, const float* U, int64_t K, const QuantSpec& s,
                          float* w1, float* err, uint8_t* codes, GroupParams* gp) {
  const int64_t G = s.group_size, cnt = i2 - i1;
  const int maxq = s.maxq();
  std::copy(w + i1, w + i2, w1);
  double loss = 0.0;
  for (int64_t j = 0; j < cnt; ++j) {
    const int64_t c = i1 + j;
    if (c % G == 0) gp[c / G] = find_params(w + c, G, s);
    const GroupParams& cur = gp[c / G];
    const float x = w1[j];
    const int code = quantize_code(x, cur, maxq);
    codes[c] = static_cast<uint8_t>(code);
    if (!U) continue;
    const float qd = dequantize_code(code, cur);
    const float* u = U + c * K + c;
    const float d = u[0];
    const float e = (x - qd) / d;
    loss += static_cast<double>((x - qd) * (x - qd)) / (static_cast<double>(d) * d);
    for (int64_t k = j; k < cnt; ++k) w1[k] -= e * u[k - j];
    err[j] = e;
  }
  return loss;
}

// Each row's whole loop on its own, the trailing updates as plain fp32 loops.
void column_loop_reference(std::vector<float>& Wp, int64_t N, int64_t K, const float* U, const QuantSpec& s,
                           std::vector<uint8_t>& codes, std::vector<GroupParams>& gp, std::vector<double>& loss) {
  const int64_t B = s.block_size, ng = K / s.group_size;
  parallel_for(N, 4, [&](int64_t r0, int64_t r1, int) {
    std::vector<float> w1(B), err(B);
    for (int64_t r = r0; r < r1; ++r) {
      float* w = Wp.data() + r * K;
      for (int64_t i1 = 0; i1 < K; i1 += B) {
        const int64_t i2 = std::min(i1 + B, K);
        loss[r] += quantize_block_row(w, i1, i2, U, K, s, w1.data(), err.data(), codes.data() + r * K,
                                      gp.data() + r * ng);
        if (!U) continue;
        for (int64_t j = 0; j < i2 - i1; ++j) {
          const float e = err[j];
          const float* u = U + (i1 + j) * K;
          for (int64_t k = i2; k < K; ++k) w[k] -= e * u[k];
        }
      }
    }
  });
}

// All rows block by block: the in-block loops in parallel over rows, then the
// trailing update W[:, i2:] −= E · U[i1:i2, i2:] as one ops::matmul.
void column_loop_blocked(std::vector<float>& Wp, int64_t N, int64_t K, const float* U, const QuantSpec& s,
                         std::vector<uint8_t>& codes, std::vector<GroupParams>& gp, std::vector<double>& loss) {
  const int64_t B = s.block_size, ng = K / s.group_size;
  std::vector<float> E(static_cast<size_t>(N * B)), Ut, Y;
  for (int64_t i1 = 0; i1 < K; i1 += B) {
    const int64_t i2 = std::min(i1 + B, K), cnt = i2 - i1, rest = K - i2;
    parallel_for(N, 4, [&](int64_t r0, int64_t r1, int) {
      std::vector<float> w1(cnt);
      for (int64_t r = r0; r < r1; ++r)
        loss[r] += quantize_block_row(Wp.data() + r * K, i1, i2, U, K, s, w1.data(), E.data() + r * cnt,
                                      codes.data() + r * K, gp.data() + r * ng);
    });
    if (!U || rest == 0) continue;
    Ut.resize(static_cast<size_t>(rest * cnt));   // Ut[k][j] = U[i1 + j][i2 + k]
    for (int64_t j = 0; j < cnt; ++j)
      for (int64_t k = 0; k < rest; ++k) Ut[k * cnt + j] = U[(i1 + j) * K + i2 + k];
    Y.resize(static_cast<size_t>(N * rest));
    ops::matmul(ops::dense_view(ops::WType::F32, Ut.data(), rest, cnt), E.data(), N, Y.data());
    parallel_for(N, 16, [&](int64_t r0, int64_t r1, int) {
      for (int64_t r = r0; r < r1; ++r) {
        float* w = Wp.data() + r * K + i2;
        const float* y = Y.data() + r * rest;
        for (int64_t k = 0; k < rest; ++k) w[k] -= y[k];
      }
    });
  }
}

}  // namespace

Quantized quantize_gptq(const float* W, int64_t N, int64_t K, const PreparedHessian& h, const QuantSpec& s) {
  if (h.K != K) fail("quantize_gptq: Hessian is ", h.K, "x", h.K, " for ", K, " inputs");
  Quantized out;
  out.w = empty_linear(N, K, s);
  out.damp = h.damp;
  out.no_inverse = h.U.empty();
  GptqLinear& q = out.w;
  const int64_t G = s.group_size, ng = q.num_groups;
  const float* U = h.U.empty() ? nullptr : h.U.data();
  std::vector<float> Wp(static_cast<size_t>(N * K));   // rows in visiting order, dead inputs zeroed
  parallel_for(N, 16, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t i = 0; i < K; ++i) Wp[r * K + i] = h.dead[h.perm[i]] ? 0.0f : W[r * K + h.perm[i]];
  });
  std::vector<uint8_t> codes(static_cast<size_t>(N * K));
  std::vector<GroupParams> gp(static_cast<size_t>(N * ng));
  std::vector<double> row_loss(N, 0.0);
  if (s.reference_impl)
    column_loop_reference(Wp, N, K, U, s, codes, gp, row_loss);
  else
    column_loop_blocked(Wp, N, K, U, s, codes, gp, row_loss);
  parallel_for(N, 16, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t i = 0; i < K; ++i) q.q[r * K + h.perm[i]] = codes[r * K + i];
      for (int64_t g = 0; g < ng; ++g) {
        // GAR: permuted group g is original group group_order[g]; desc_act keeps permuted groups.
        const int64_t dst = !h.group_order.empty() ? h.group_order[g] : g;
        q.scale[r * ng + dst] = gp[r * ng + g].scale;
        q.zero[r * ng + dst] = static_cast<uint8_t>(gp[r * ng + g].zero);
      }
    }
  });
  if (s.desc_act) {
    q.g_idx.resize(K);
    for (int64_t i = 0; i < K; ++i) q.g_idx[h.perm[i]] = static_cast<int32_t>(i / G);
    bool trivial = true;
    for (int64_t k = 0; k < K; ++k) trivial = trivial && q.g_idx[k] == k / G;
    if (trivial) q.g_idx.clear();
  }
  double total = 0.0;
  for (double l : row_loss) total += l / 2.0;
  out.avg_loss = U && h.nsamples > 0 ? total / static_cast<double>(h.nsamples) : 999999999.0;
  return out;
}

double output_error(const float* W, const GptqLinear& q, const float* S) {
  // Δ = W − Q [N][K]; Y = Δ · S (S symmetric, so Δ · Sᵀ: one ops::matmul); error = Σ Δ ∘ Y.
  const int64_t N = q.rows, K = q.cols;
  std::vector<float> D(static_cast<size_t>(N * K)), Y(static_cast<size_t>(N * K));
  parallel_for(N, 16, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t k = 0; k < K; ++k) D[r * K + k] = W[r * K + k] - q.weight(r, k);
  });
  ops::matmul(ops::dense_view(ops::WType::F32, S, K, K), D.data(), N, Y.data());
  double total = 0.0;
  for (int64_t i = 0; i < N * K; ++i) total += static_cast<double>(D[i]) * Y[i];
  return total;
}

}  // namespace qinfer::quant
