// A weight product y = x · Wᵀ as the model uses it: a dense matrix borrowed from
// the mapped checkpoint (BF16/F16/F32, or an int8 re-encoding) or a repacked
// GPTQ int4 matrix. All products go through ops/matmul.h.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/config.h"
#include "io/gptq.h"
#include "ops/matmul.h"

namespace qinfer::model {

class ResidentArena;

struct Linear {
  int64_t rows = 0, cols = 0;                // out, in
  ops::DenseMatrix dense;                    // used when gptq is null
  std::unique_ptr<ops::GptqMatrix> gptq;

  bool empty() const { return rows == 0; }
  // Y[n][rows] = X[n][cols] · Wᵀ
  void apply(const float* X, int64_t n, float* Y) const;
  size_t bytes() const;
};

// A view of the first `rows` output rows of a dense Linear (borrows its weights; the
// int8 form copies the row scales). Error for GPTQ matrices.
Linear row_prefix(const Linear& l, int64_t rows);
// An int8 (per-row scale) copy of a dense Linear, as --dense int8 makes. Error for GPTQ.
Linear to_int8(const Linear& l);
// Re-encodes an encodable BF16 matrix (ops::bf16c_encodable) in the 12-bit form, its
// stream in `arena` when given (else owned), unless its sampled blocks escape more
// often than kBf16cMaxEscapeShare; rows_done as ops::dense_to_bf16c's. Returns whether
// it did (the caller then drops the source pages).
bool reencode_bf16c(ops::DenseMatrix& m, ResidentArena* arena,
                    const std::function<void(int64_t, int64_t)>& rows_done = nullptr);

// n values of a float tensor (F32, BF16 or F16 bytes at p, any alignment) widened to fp32.
void to_f32(DType dtype, const uint8_t* p, int64_t n, float* out);

ops::WType wtype_of(const TensorInfo& t);   // Error naming the tensor for non-float dtypes

// BF16C (ops/bf16c.h) is not made for a matrix whose sampled blocks escape its table
// more often than this: it would save little (0.82 of BF16 at this share).
constexpr double kBf16cMaxEscapeShare = 0.05;

// Reads tensors of one checkpoint with shape checks against the config.
class WeightReader {
 public:
  WeightReader(const Checkpoint& ck, const QuantConfig& quant, bool dense_int8)
      : ck_(ck), quant_(quant), dense_int8_(dense_int8) {}

  const Checkpoint& checkpoint() const { return ck_; }
  // When set, --dense int8 re-encodings are written straight into it (no heap copy).
  void set_arena(ResidentArena* a) { arena_ = a; }
  // BF16 matrices (quantizable ones, whole 64-column blocks) re-encoded in the lossless
  // 12-bit form (ops/bf16c.h), into the arena when set; ignored with dense_int8.
  void set_bf16c(bool on) { bf16c_ = on; }
  const QuantConfig& quant() const { return quant_; }

  // The tensor, checked to be a float tensor of the given shape.
  const TensorInfo& tensor(const std::string& name, const std::vector<int64_t>& shape) const;
  // A float tensor widened to fp32 (any of BF16/F16/F32), shape checked.
  std::vector<float> floats(const std::string& name, const std::vector<int64_t>& shape) const;
  // The linear module at `module` ([out, in]): GPTQ when <module>.qweight exists,
  // else the dense <module>.weight. `quantizable` false keeps the dense matrix in
  // its stored dtype even with dense_int8 or bf16c (routers and tiny gates); `bf16c_ok`
  // false keeps it out of the 12-bit form only (routed experts: the expert cache maps them).
  Linear linear(const std::string& module, int64_t out, int64_t in, bool quantizable = true,
                bool bf16c_ok = true) const;
  // Dense view of a matrix held inside a bigger tensor (fused experts).
  Linear dense_slice(const TensorInfo& t, int64_t offset_elems, int64_t rows, int64_t cols) const;
  // GPTQ canonical form of <module> with shape checks.
  GptqLinear gptq(const std::string& module, int64_t out, int64_t in) const;

 private:
  const Checkpoint& ck_;
  const QuantConfig& quant_;
  bool dense_int8_;
  bool bf16c_ = false;
  ResidentArena* arena_ = nullptr;
  Linear dense_linear(const TensorInfo& t, const uint8_t* src, int64_t rows, int64_t cols, bool quantizable,
                      bool bf16c_ok) const;
};

// Same columns, groups and g_idx: the two can be fused into one product.
bool same_gptq_layout(const GptqLinear& a, const GptqLinear& b);

// Packs canonical GPTQ codes; when `second` is given its rows are appended
// (used to fuse an expert's gate and up projections into one product).
std::unique_ptr<ops::GptqMatrix> pack_gptq(const GptqLinear& first, const GptqLinear* second,
                                           const std::string& what);

// Runs several products (GPTQ and dense alike) in one parallel pass
// (ops::matmul_batch).
struct Product {
  const Linear* W = nullptr;
  const float* X = nullptr;
  int64_t n = 0;
  float* Y = nullptr;
};
void apply_all(const std::vector<Product>& products);

}  // namespace qinfer::model
