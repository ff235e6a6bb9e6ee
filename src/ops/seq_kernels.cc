// Picks the sequence-kernel table: the same path name as the matrix kernels
// (ops::kernel_path(), so QINFER_KERNELS forces both families together), except
// that AVX-512 CPUs without VNNI/BF16 still get the AVX-512 sequence kernels.
#include <cstdlib>
#include <cstring>

#include "ops/cpu_features.h"
#include "ops/matmul.h"
#include "ops/seq_kernel_table.h"
#include "util/error.h"

namespace qinfer::ops::detail {
namespace {

// What seq_kernels_avx512.cc uses (it needs no VNNI / BF16 instructions).
bool can_run_avx512_seq(const CpuFeatures& f) {
  return f.has_avx2_path() && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
}

}  // namespace

const SeqKernelTable& seq_scalar_kernels() {
  static const SeqKernelTable t{"scalar", vexp_scalar, attend_scalar, attend_packed_scalar, delta_recurrent_scalar, delta_chunked_scalar,
                                conv_silu_scalar};
  return t;
}

const SeqKernelTable* seq_kernels_for(const std::string& name) {
  const CpuFeatures& f = cpu_features();
  if (name == "scalar") return &seq_scalar_kernels();
  if (name == "avx2") return f.has_avx2_path() ? &seq_avx2_kernels() : nullptr;
  if (name == "avx512") return can_run_avx512_seq(f) ? &seq_avx512_kernels() : nullptr;
  fail("unknown sequence-kernel path '", name, "' (expected scalar, avx2 or avx512)");
}

std::vector<std::string> seq_kernel_paths() {
  std::vector<std::string> out;
  for (const char* p : {"scalar", "avx2", "avx512"})
    if (seq_kernels_for(p)) out.push_back(p);
  return out;
}

// The matrix kernels' avx512 path also needs VNNI and BF16, which many AVX-512
// CPUs lack (Skylake-SP, Cascade Lake, Ice Lake); there kernel_path() says
// "avx2" but these kernels still run on AVX-512, unless QINFER_KERNELS=avx2
// asks for AVX2 explicitly.
const SeqKernelTable& seq_kernels() {
  static const bool avx512_ok = [] {
    const char* env = std::getenv("QINFER_KERNELS");
    return can_run_avx512_seq(cpu_features()) && !(env && std::strcmp(env, "avx2") == 0);
  }();
  const char* path = kernel_path();
  if (std::strcmp(path, "avx512") == 0) return seq_avx512_kernels();
  if (std::strcmp(path, "avx2") == 0) return avx512_ok ? seq_avx512_kernels() : seq_avx2_kernels();
  return seq_scalar_kernels();
}

}  // namespace qinfer::ops::detail
