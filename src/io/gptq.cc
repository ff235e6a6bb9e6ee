#include "io/gptq.h"

#include <cmath>
#include <cstring>

#include "util/error.h"

namespace qinfer {

namespace {

// Loads go through memcpy: a valid safetensors file may place a tensor at any byte offset.
float scale_value(const TensorInfo& t, int64_t i) {
  uint16_t h;
  float f;
  switch (t.dtype) {
    case DType::F16: std::memcpy(&h, t.data + 2 * i, 2); f = f16_to_f32(h); break;
    case DType::BF16: std::memcpy(&h, t.data + 2 * i, 2); f = bf16_to_f32(h); break;
    case DType::F32: std::memcpy(&f, t.data + 4 * i, 4); break;
    default: fail(t.file, ": tensor ", t.name, ": scales must be F16, BF16 or F32");
  }
  if (!std::isfinite(f)) fail(t.file, ": tensor ", t.name, ": element ", i, " is not finite (", f, ")");
  return f;
}

uint32_t word(const TensorInfo& t, int64_t i) {
  uint32_t w;
  std::memcpy(&w, t.data + 4 * i, 4);
  return w;
}

}  // namespace

float GptqLinear::weight(int64_t n, int64_t k) const {
  int64_t g = g_idx.empty() ? k / group_size : g_idx[k];
  return scale[n * num_groups + g] * (static_cast<int>(q[n * cols + k]) - static_cast<int>(zero[n * num_groups + g]));
}

std::vector<float> GptqLinear::dequantize() const {
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t k = 0; k < cols; ++k) w[n * cols + k] = weight(n, k);
  return w;
}

bool is_gptq_module(const Checkpoint& ck, const std::string& prefix) { return ck.has(prefix + ".qweight"); }

GptqLinear load_gptq(const Checkpoint& ck, const QuantConfig& qc, const std::string& prefix,
                     int64_t expect_out, int64_t expect_in) {
  if (!qc.enabled) fail(ck.dir(), ": tensor ", prefix, ".qweight is GPTQ-packed but config.json has no quantization_config");
  int bits = qc.bits, group_size = qc.group_size;
  bool desc_act = qc.desc_act;
  if (const auto* rule = qc.match(prefix)) {
    if (rule->skip) fail(ck.dir(), ": module ", prefix, " has GPTQ tensors but quantization_config.dynamic excludes it");
    if (rule->bits > 0) bits = rule->bits;
    if (rule->group_size != -2) group_size = rule->group_size;
    if (rule->desc_act >= 0) desc_act = rule->desc_act;
  }
  if (bits != 4) fail(ck.dir(), ": module ", prefix, ": only 4-bit GPTQ is supported, config says ", bits);
  const int pack = 32 / bits;
  const TensorInfo& qw = ck.get(prefix + ".qweight");
  const TensorInfo& qz = ck.get(prefix + ".qzeros");
  const TensorInfo& sc = ck.get(prefix + ".scales");
  const TensorInfo* gi = ck.find(prefix + ".g_idx");
  qw.expect_dtype({DType::I32});
  qz.expect_dtype({DType::I32});
  sc.expect_dtype({DType::F16, DType::BF16, DType::F32});
  if (qw.shape.size() != 2) fail(qw.file, ": tensor ", qw.name, ": expected 2 dimensions, got ", qw.shape_str());
  const int64_t K = qw.shape[0] * pack, N = qw.shape[1];
  if (expect_in >= 0 && K != expect_in)
    fail(qw.file, ": tensor ", qw.name, ": packs ", K, " inputs but the layer needs ", expect_in, " (shape ", qw.shape_str(), ")");
  if (expect_out >= 0 && N != expect_out)
    fail(qw.file, ": tensor ", qw.name, ": has ", N, " outputs but the layer needs ", expect_out, " (shape ", qw.shape_str(), ")");
  if (N % pack) fail(qz.file, ": tensor ", qz.name, ": output count ", N, " is not a multiple of ", pack);
  if (group_size == -1) group_size = static_cast<int>(K);
  if (group_size <= 0 || K % group_size)
    fail(qw.file, ": module ", prefix, ": group_size ", group_size, " does not divide the input size ", K);
  const int64_t G = K / group_size;
  sc.expect_shape({G, N});
  qz.expect_shape({G, N / pack});

  GptqLinear w;
  w.rows = N;
  w.cols = K;
  w.bits = bits;
  w.group_size = group_size;
  w.num_groups = G;
  w.q.resize(static_cast<size_t>(N * K));
  w.scale.resize(static_cast<size_t>(N * G));
  w.zero.resize(static_cast<size_t>(N * G));
  // qweight [K/8, N]: transposes to [N][K] codes.
  for (int64_t r = 0; r < K / pack; ++r)
    for (int64_t n = 0; n < N; ++n) {
      uint32_t v = word(qw, r * N + n);
      uint8_t* dst = &w.q[n * K + r * pack];
      for (int j = 0; j < pack; ++j) dst[j] = (v >> (bits * j)) & 0xF;
    }
  // v1 ("gptq") stores zero-1 per nibble, written by subtracting 0x11111111 from each
  // word (a zero of 0 borrows from the next nibble). Adding it back undoes that exactly.
  const uint32_t v1_offset = qc.v2_zeros ? 0u : 0x11111111u;
  for (int64_t g = 0; g < G; ++g)
    for (int64_t n = 0; n < N; ++n) {
      uint32_t v = word(qz, g * (N / pack) + n / pack) + v1_offset;
      w.zero[n * G + g] = static_cast<uint8_t>((v >> (bits * (n % pack))) & 0xF);
      w.scale[n * G + g] = scale_value(sc, g * N + n);
    }
  if (gi) {
    gi->expect_dtype({DType::I32});
    gi->expect_shape({K});
    std::vector<int32_t> g(static_cast<size_t>(K));
    std::memcpy(g.data(), gi->data, static_cast<size_t>(K) * 4);
    bool trivial = true;
    for (int64_t k = 0; k < K; ++k) {
      if (g[k] < 0 || g[k] >= G) fail(gi->file, ": tensor ", gi->name, ": g_idx[", k, "] = ", g[k], " is not a group (0..", G - 1, ")");
      trivial = trivial && g[k] == k / group_size;
    }
    if (!trivial) {
      if (!desc_act)
        fail(gi->file, ": tensor ", gi->name, ": g_idx is permuted but quantization_config.desc_act is false");
      w.g_idx = std::move(g);
    }
  }
  return w;
}

GptqPacked pack_gptq(const GptqLinear& w, bool v2_zeros) {
  const int pack = 8;
  const int64_t K = w.cols, N = w.rows, G = w.num_groups;
  if (K % pack || N % pack) fail("pack_gptq: shape ", N, "x", K, " is not a multiple of 8");
  GptqPacked p;
  p.num_groups = G;
  p.qweight.assign(static_cast<size_t>(K / pack * N), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      reinterpret_cast<uint32_t&>(p.qweight[(k / pack) * N + n]) |= static_cast<uint32_t>(w.q[n * K + k] & 0xF) << (4 * (k % pack));
  p.qzeros.assign(static_cast<size_t>(G * N / pack), 0);
  p.scales_f16.resize(static_cast<size_t>(G * N));
  for (int64_t g = 0; g < G; ++g)
    for (int64_t n = 0; n < N; ++n) {
      reinterpret_cast<uint32_t&>(p.qzeros[g * (N / pack) + n / pack]) |= static_cast<uint32_t>(w.zero[n * G + g] & 0xF) << (4 * (n % pack));
      p.scales_f16[g * N + n] = f32_to_f16(w.scale[n * G + g]);
    }
  if (!v2_zeros)  // v1: subtract one per nibble, the way GPTQModel converts v2 to v1
    for (auto& z : p.qzeros) reinterpret_cast<uint32_t&>(z) -= 0x11111111u;
  p.g_idx.resize(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) p.g_idx[k] = w.g_idx.empty() ? static_cast<int32_t>(k / w.group_size) : w.g_idx[k];
  return p;
}

}  // namespace qinfer
