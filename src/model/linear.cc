#include "model/linear.h"

#include <cmath>
#include <cstring>
#include <functional>

#include "io/dtype.h"
#include "ops/bf16c.h"
#include "model/resident.h"
#include "util/error.h"

namespace qinfer::model {

void Linear::apply(const float* X, int64_t n, float* Y) const {
  if (n <= 0) return;
  if (gptq) ops::matmul(*gptq, X, n, Y);
  else ops::matmul(dense, X, n, Y);
}

Linear row_prefix(const Linear& l, int64_t rows) {
  if (l.gptq) fail("row_prefix: a GPTQ matrix has no row-prefix view");
  if (rows < 1 || rows > l.rows) fail("row_prefix: ", rows, " rows of a ", l.rows, "-row matrix");
  Linear v;
  v.rows = rows;
  v.cols = l.cols;
  v.dense.type = l.dense.type;
  v.dense.rows = rows;
  v.dense.cols = l.dense.cols;
  v.dense.data = l.dense.weights();   // rows are contiguous: the first `rows` of them
  v.dense.bf16c = l.dense.bf16c;      // BF16C: its escape index covers every row
  if (!l.dense.row_scale.empty())
    v.dense.row_scale.assign(l.dense.row_scale.begin(), l.dense.row_scale.begin() + rows);
  return v;
}

Linear to_int8(const Linear& l) {
  if (l.gptq) fail("to_int8: a GPTQ matrix is not re-encoded");
  Linear q;
  q.rows = l.rows;
  q.cols = l.cols;
  q.dense = ops::dense_to_q8(l.dense);
  return q;
}

size_t Linear::bytes() const {
  if (gptq) return static_cast<size_t>(gptq->bytes());
  return static_cast<size_t>(dense.bytes());
}

namespace {
// For dense_to_q8: drops the mapped source pages of each finished run of rows
// (row_bytes apart from src), so a large matrix is never resident twice.
std::function<void(int64_t, int64_t)> drop_rows(const uint8_t* src, int64_t row_bytes) {
  return [src, row_bytes](int64_t r0, int64_t r1) { drop_pages(src + r0 * row_bytes, (r1 - r0) * row_bytes); };
}
}  // namespace

bool reencode_bf16c(ops::DenseMatrix& m, ResidentArena* arena, const std::function<void(int64_t, int64_t)>& rows_done) {
  if (!ops::bf16c_encodable(m)) return false;
  // Where the table leaves more than 1 block in 20 raw, the form saves little: kept as is.
  const ops::Bf16cTable table = ops::bf16c_table(m);
  if (table.escape_share > kBf16cMaxEscapeShare) return false;
  uint8_t* dst = arena ? arena->alloc(static_cast<size_t>(ops::bf16c_stream_bytes(m.rows, m.cols))) : nullptr;
  m = ops::dense_to_bf16c(m, table, rows_done, dst);
  return true;
}

void to_f32(DType dtype, const uint8_t* p, int64_t n, float* out) {
  if (dtype == DType::F32) {
    std::memcpy(out, p, n * sizeof(float));
    return;
  }
  float (*widen)(uint16_t) = dtype == DType::BF16 ? &bf16_to_f32 : &f16_to_f32;
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    out[i] = widen(h);
  }
}

ops::WType wtype_of(const TensorInfo& t) {
  switch (t.dtype) {
    case DType::BF16: return ops::WType::BF16;
    case DType::F16: return ops::WType::F16;
    case DType::F32: return ops::WType::F32;
    default: break;
  }
  t.expect_dtype({DType::BF16, DType::F16, DType::F32});
  return ops::WType::F32;  // unreachable
}

const TensorInfo& WeightReader::tensor(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorInfo& t = ck_.get(name);
  t.expect_dtype({DType::BF16, DType::F16, DType::F32});
  t.expect_shape(shape);
  return t;
}

std::vector<float> WeightReader::floats(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorInfo& t = tensor(name, shape);
  const int64_t n = t.numel();
  std::vector<float> out(n);
  to_f32(t.dtype, t.data, n, out.data());
  // Norm weights, conv kernels, A_log, dt_bias: one NaN here turns every output into NaN.
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(out[i])) fail(t.file, ": tensor ", name, ": element ", i, " is not finite (", out[i], ")");
  return out;
}

Linear WeightReader::dense_linear(const TensorInfo& t, const uint8_t* src, int64_t rows, int64_t cols,
                                  bool quantizable, bool bf16c_ok) const {
  Linear l;
  l.rows = rows;
  l.cols = cols;
  const int64_t esz = static_cast<int64_t>(dtype_size(t.dtype));
  l.dense = ops::dense_view(wtype_of(t), src, rows, cols);
  if (quantizable && !dense_int8_ && bf16c_ && bf16c_ok) {
    if (reencode_bf16c(l.dense, arena_, drop_rows(src, cols * esz)))
      drop_pages(src, static_cast<size_t>(rows * cols * esz));   // re-encoded: the source is not read again
    return l;
  }
  if (quantizable && dense_int8_) {
    uint8_t* dst = arena_ ? arena_->alloc(static_cast<size_t>(rows * cols)) : nullptr;
    l.dense = ops::dense_to_q8(l.dense, drop_rows(src, cols * esz), dst);
    drop_pages(src, static_cast<size_t>(rows * cols * esz));   // re-encoded: the source is not read again
  }
  return l;
}

Linear WeightReader::dense_slice(const TensorInfo& t, int64_t offset_elems, int64_t rows, int64_t cols) const {
  return dense_linear(t, t.data + offset_elems * static_cast<int64_t>(dtype_size(t.dtype)), rows, cols, true, false);
}

GptqLinear WeightReader::gptq(const std::string& module, int64_t out, int64_t in) const {
  if (!quant_.enabled)
    fail(ck_.dir(), ": tensor ", module, ".qweight is GPTQ-packed but config.json has no quantization_config");
  GptqLinear g = load_gptq(ck_, quant_, module, out, in);
  // The canonical form is a copy: the packed source pages are not read again.
  for (const char* leaf : {".qweight", ".qzeros", ".scales", ".g_idx"})
    if (ck_.has(module + leaf)) {
      const TensorInfo& t = ck_.get(module + leaf);
      drop_pages(t.data, t.nbytes);
    }
  return g;
}

Linear WeightReader::linear(const std::string& module, int64_t out, int64_t in, bool quantizable,
                            bool bf16c_ok) const {
  const bool has_q = ck_.has(module + ".qweight");
  const bool has_w = ck_.has(module + ".weight");
  if (has_q && has_w) fail(ck_.dir(), ": module ", module, " has both .weight and .qweight");
  if (has_q) {
    Linear l;
    l.rows = out;
    l.cols = in;
    l.gptq = pack_gptq(gptq(module, out, in), nullptr, module);
    return l;
  }
  const TensorInfo& t = tensor(module + ".weight", {out, in});
  return dense_linear(t, t.data, out, in, quantizable, bf16c_ok);
}

bool same_gptq_layout(const GptqLinear& a, const GptqLinear& b) {
  return a.cols == b.cols && a.group_size == b.group_size && a.num_groups == b.num_groups && a.g_idx == b.g_idx &&
         a.bits == b.bits;
}

std::unique_ptr<ops::GptqMatrix> pack_gptq(const GptqLinear& a, const GptqLinear* b, const std::string& what) {
  const int64_t groups = (a.cols + a.group_size - 1) / a.group_size;
  if (a.bits != 4) fail(what, ": only 4-bit GPTQ is supported (bits = ", a.bits, ")");
  if (a.num_groups != groups)
    fail(what, ": ", a.num_groups, " quantization groups for ", a.cols, " inputs with group_size ", a.group_size,
         " (expected ", groups, ")");
  ops::GptqCanonical c;
  c.cols = a.cols;
  c.group_size = a.group_size;
  c.g_idx = a.g_idx.empty() ? nullptr : a.g_idx.data();
  if (!b) {
    c.rows = a.rows;
    c.q = a.q.data();
    c.scale = a.scale.data();
    c.zero = a.zero.data();
    return ops::gptq_pack(c);
  }
  if (!same_gptq_layout(a, *b))
    fail(what, ": the two fused projections have different GPTQ layouts");
  std::vector<uint8_t> q(a.q), zero(a.zero);
  std::vector<float> scale(a.scale);
  q.insert(q.end(), b->q.begin(), b->q.end());
  zero.insert(zero.end(), b->zero.begin(), b->zero.end());
  scale.insert(scale.end(), b->scale.begin(), b->scale.end());
  c.rows = a.rows + b->rows;
  c.q = q.data();
  c.scale = scale.data();
  c.zero = zero.data();
  return ops::gptq_pack(c);
}

void apply_all(const std::vector<Product>& products) {
  std::vector<ops::BatchProduct> batch;
  for (const auto& p : products) {
    if (p.n <= 0) continue;
    ops::BatchProduct b;
    if (p.W->gptq) b.gptq = p.W->gptq.get();
    else b.dense = &p.W->dense;
    b.X = p.X;
    b.n = p.n;
    b.Y = p.Y;
    batch.push_back(b);
  }
  if (!batch.empty()) ops::matmul_batch(batch.data(), batch.size());
}

}  // namespace qinfer::model
