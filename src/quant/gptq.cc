#include "quant/gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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

// A = R Rᵀ with R upper triangular (columns from the right), then U = R⁻¹, so
// UᵀU = A⁻¹ and U is the upper Cholesky factor of A⁻¹ (what GPTQModel gets from
// cholesky(cholesky_inverse(cholesky(A)), upper=True)), with half the work.
bool upper_inverse_factor(const std::vector<double>& A, int64_t K, std::vector<float>* Uout) {
  std::vector<double> R(static_cast<size_t>(K * K), 0.0);
  for (int64_t j = K - 1; j >= 0; --j) {
    const double* rj = &R[j * K];
    double s = A[j * K + j];
    for (int64_t k = j + 1; k < K; ++k) s -= rj[k] * rj[k];
    if (!(s > 0.0) || !std::isfinite(s)) return false;
    const double d = std::sqrt(s);
    R[j * K + j] = d;
    parallel_for(j, 64, [&](int64_t i0, int64_t i1, int) {
      for (int64_t i = i0; i < i1; ++i) {
        const double* ri = &R[i * K];
        double t = A[i * K + j];
        for (int64_t k = j + 1; k < K; ++k) t -= ri[k] * rj[k];
        R[i * K + j] = t / d;
      }
    });
  }
  // U = R⁻¹ column by column; Ut[c][k] = U[k][c] keeps the inner sums contiguous.
  std::vector<double> Ut(static_cast<size_t>(K * K), 0.0);
  bool finite = true;
  parallel_for(K, 8, [&](int64_t c0, int64_t c1, int) {
    for (int64_t c = c0; c < c1; ++c) {
      double* u = &Ut[c * K];
      u[c] = 1.0 / R[c * K + c];
      for (int64_t i = c - 1; i >= 0; --i) {
        const double* ri = &R[i * K];
        double t = 0.0;
        for (int64_t k = i + 1; k <= c; ++k) t += ri[k] * u[k];
        u[i] = -t / ri[i];
      }
      for (int64_t i = 0; i <= c; ++i)
        if (!std::isfinite(u[i])) finite = false;
    }
  });
  if (!finite) return false;
  Uout->assign(static_cast<size_t>(K * K), 0.0f);
  for (int64_t c = 0; c < K; ++c)
    for (int64_t i = 0; i <= c; ++i) (*Uout)[i * K + c] = static_cast<float>(Ut[c * K + i]);
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
      if (upper_inverse_factor(A, K, U)) {
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

Quantized quantize_gptq(const float* W, int64_t N, int64_t K, const PreparedHessian& h, const QuantSpec& s) {
  if (h.K != K) fail("quantize_gptq: Hessian is ", h.K, "x", h.K, " for ", K, " inputs");
  Quantized out;
  out.w = empty_linear(N, K, s);
  out.damp = h.damp;
  out.no_inverse = h.U.empty();
  GptqLinear& q = out.w;
  const int64_t G = s.group_size, ng = q.num_groups, B = s.block_size;
  const int maxq = s.maxq();
  const float* U = h.U.empty() ? nullptr : h.U.data();
  std::vector<double> row_loss(N, 0.0);
  parallel_for(N, 4, [&](int64_t r0, int64_t r1, int) {
    std::vector<float> w(K), w1(B), err(B);
    std::vector<uint8_t> codes(K);
    std::vector<GroupParams> gp(ng);
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t i = 0; i < K; ++i) w[i] = h.dead[h.perm[i]] ? 0.0f : W[r * K + h.perm[i]];
      double loss = 0.0;
      GroupParams cur;
      for (int64_t i1 = 0; i1 < K; i1 += B) {
        const int64_t i2 = std::min(i1 + B, K), cnt = i2 - i1;
        std::copy(w.begin() + i1, w.begin() + i2, w1.begin());
        for (int64_t j = 0; j < cnt; ++j) {
          const int64_t c = i1 + j;
          if (c % G == 0) {   // group parameters from the weights as of the block start
            cur = find_params(w.data() + c, G, s);
            gp[c / G] = cur;
          }
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
        if (!U) continue;
        for (int64_t j = 0; j < cnt; ++j) {
          const float e = err[j];
          const float* u = U + (i1 + j) * K;
          for (int64_t k = i2; k < K; ++k) w[k] -= e * u[k];
        }
      }
      row_loss[r] = loss / 2.0;
      for (int64_t i = 0; i < K; ++i) q.q[r * K + h.perm[i]] = codes[i];
      for (int64_t g = 0; g < ng; ++g) {
        // GAR: permuted group g is original group group_order[g]; desc_act keeps permuted groups.
        const int64_t dst = !h.group_order.empty() ? h.group_order[g] : g;
        q.scale[r * ng + dst] = gp[g].scale;
        q.zero[r * ng + dst] = static_cast<uint8_t>(gp[g].zero);
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
  for (double l : row_loss) total += l;
  out.avg_loss = U && h.nsamples > 0 ? total / static_cast<double>(h.nsamples) : 999999999.0;
  return out;
}

double output_error(const float* W, const GptqLinear& q, const float* S) {
  const int64_t N = q.rows, K = q.cols;
  std::vector<double> per_row(N, 0.0);
  parallel_for(N, 4, [&](int64_t r0, int64_t r1, int) {
    std::vector<double> d(K);
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t k = 0; k < K; ++k) d[k] = static_cast<double>(W[r * K + k]) - q.weight(r, k);
      double e = 0.0;
      for (int64_t i = 0; i < K; ++i) {
        if (d[i] == 0.0) continue;
        const float* si = S + i * K;
        double t = 0.0;
        for (int64_t j = 0; j < K; ++j) t += si[j] * d[j];
        e += d[i] * t;
      }
      per_row[r] = e;
    }
  });
  double total = 0.0;
  for (double e : per_row) total += e;
  return total;
}

}  // namespace qinfer::quant
