#include "quant/expert_hessians.h"

#include <cstring>

#include "ops/matmul.h"
#include "util/thread_pool.h"

namespace qinfer::quant {

ExpertHessians::ExpertHessians(Input which, int64_t experts, int64_t K, int64_t first, int64_t last,
                               int64_t block_rows)
    : which_(which), K_(K), first_(first), last_(last), block_rows_(block_rows), rows_(experts, 0) {
  S_.resize(last - first);
  buf_.resize(last - first);
  buffered_.assign(last - first, 0);
  for (auto& s : S_) s.assign(static_cast<size_t>(K * K), 0.0f);
}

void ExpertHessians::gate_up_input(int64_t e, const float* X, int64_t n) {
  if (which_ == Input::kGateUp) add(e, X, n);
}

void ExpertHessians::down_input(int64_t e, const float* X, int64_t n) {
  if (which_ == Input::kDown) add(e, X, n);
}

void ExpertHessians::add(int64_t e, const float* X, int64_t n) {
  rows_[e] += n;
  if (e < first_ || e >= last_) return;
  const int64_t i = e - first_;
  while (n > 0) {
    const int64_t take = std::min(n, block_rows_ - buffered_[i]);
    buf_[i].resize(static_cast<size_t>(block_rows_ * K_));
    std::memcpy(buf_[i].data() + buffered_[i] * K_, X, static_cast<size_t>(take * K_) * sizeof(float));
    buffered_[i] += take;
    X += take * K_;
    n -= take;
    if (buffered_[i] == block_rows_) fold(e);
  }
}

void ExpertHessians::fold(int64_t e) {
  const int64_t i = e - first_, m = buffered_[i], K = K_;
  if (m == 0) return;
  // Xᵀ [K][m]; Y = Xᵀ · (Xᵀ)ᵀ = XᵀX [K][K].
  xt_.resize(static_cast<size_t>(K * m));
  const float* x = buf_[i].data();
  for (int64_t r = 0; r < m; ++r)
    for (int64_t k = 0; k < K; ++k) xt_[k * m + r] = x[r * K + k];
  y_.resize(static_cast<size_t>(K * K));
  ops::matmul(ops::dense_view(ops::WType::F32, xt_.data(), K, m), xt_.data(), K, y_.data());
  float* s = S_[i].data();
  parallel_for(K, 16, [&](int64_t a, int64_t b, int) {
    for (int64_t j = a * K; j < b * K; ++j) s[j] += y_[j];
  });
  buffered_[i] = 0;
}

void ExpertHessians::finish() {
  for (int64_t e = first_; e < last_; ++e) fold(e);
  for (auto& b : buf_) std::vector<float>().swap(b);
}

}  // namespace qinfer::quant
