// A MoeObserver that accumulates S_e = Σ xᵀx over the rows the router sends to
// each expert e in [first, last), for the gate/up inputs or the down inputs, and
// counts every expert's rows. Rows are buffered per expert and folded into S_e
// in blocks with one ops::matmul (XᵀX as a product of Xᵀ with itself), in fp32
// like GPTQModel's Hessian.
#pragma once
#include <cstdint>
#include <vector>

#include "model/layers.h"

namespace qinfer::quant {

class ExpertHessians : public model::MoeObserver {
 public:
  enum class Input { kGateUp, kDown };
  ExpertHessians(Input which, int64_t experts, int64_t K, int64_t first, int64_t last, int64_t block_rows = 128);

  void gate_up_input(int64_t e, const float* X, int64_t n) override;
  void down_input(int64_t e, const float* X, int64_t n) override;
  void finish();                                   // fold the buffered rows in

  int64_t rows(int64_t e) const { return rows_[e]; }
  const float* S(int64_t e) const { return S_[e - first_].data(); }   // [K][K], e in [first, last)
  static size_t bytes_per_expert(int64_t K) { return static_cast<size_t>(K * K) * sizeof(float); }

 private:
  void add(int64_t e, const float* X, int64_t n);
  void fold(int64_t e);
  Input which_;
  int64_t K_, first_, last_, block_rows_;
  std::vector<int64_t> rows_;
  std::vector<std::vector<float>> S_, buf_;
  std::vector<int64_t> buffered_;
  std::vector<float> xt_, y_;
};

}  // namespace qinfer::quant
