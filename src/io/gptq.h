// GPTQ-packed linear layers (GPTQModel / AutoGPTQ layout): unpacking the int32
// nibble packing to canonical per-weight codes, zero-point versions v1/v2, g_idx.
//   qweight [K/8, N] I32: code of input k, output n in qweight[k/8][n] bits 4*(k%8)
//   qzeros  [G, N/8] I32: zero of group g, output n in qzeros[g][n/8] bits 4*(n%8)
//   scales  [G, N]  F16 (or BF16/F32)
//   g_idx   [K]     I32 (optional)
// Canonical form (row = output feature, as a PyTorch Linear weight):
//   w[n][k] = scale[n][g(k)] * (q[n][k] - zero[n][g(k)])
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/config.h"

namespace qinfer {

struct GptqLinear {
  int64_t rows = 0;                // N, output features
  int64_t cols = 0;                // K, input features
  int bits = 4;
  int group_size = 0;              // K when the config says -1
  int64_t num_groups = 0;
  std::vector<uint8_t> q;          // [rows][cols] codes
  std::vector<float> scale;        // [rows][num_groups]
  std::vector<uint8_t> zero;       // [rows][num_groups] true zero points (v1 already +1)
  std::vector<int32_t> g_idx;      // [cols]; empty when g_idx[k] == k / group_size for all k

  float weight(int64_t n, int64_t k) const;
  std::vector<float> dequantize() const;  // [rows][cols] float
};

// The module has GPTQ tensors (<prefix>.qweight present)?
bool is_gptq_module(const Checkpoint& ck, const std::string& prefix);

// Reads <prefix>.{qweight,qzeros,scales[,g_idx]}; checks every shape and dtype against
// each other and the expected [out, in] (pass -1 to skip), naming the tensor on error.
GptqLinear load_gptq(const Checkpoint& ck, const QuantConfig& qc, const std::string& prefix,
                     int64_t expect_out, int64_t expect_in);

// Packs canonical codes back to the checkpoint layout (used by quantize and synth).
struct GptqPacked {
  std::vector<int32_t> qweight, qzeros, g_idx;
  std::vector<uint16_t> scales_f16;
  int64_t num_groups = 0;
};
GptqPacked pack_gptq(const GptqLinear& w, bool v2_zeros);

}  // namespace qinfer
