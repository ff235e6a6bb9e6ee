// What this CPU (and the OS, for the register state) supports, read with cpuid.
#pragma once
#include <string>

namespace qinfer::ops {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false, avx512bf16 = false;
  // AMX-TILE + AMX-BF16 (and AVX512-VBMI) on the CPU, tile state enabled by the OS and granted to this
  // process (Linux arch_prctl ARCH_REQ_XCOMP_PERM, asked once at detection). A CPU
  // that lists AMX where the permission is refused gets false, never a fault.
  bool amx_bf16 = false;
  // CLFLUSHOPT (the kernel probes evict their matrices with it: 64 MiB in ~3 ms on
  // an Intel Xeon VM, where the serializing clflush took 140 ms).
  bool clflushopt = false;

  // Everything matmul_avx2.cc / matmul_avx512.cc are compiled for.
  bool has_avx2_path() const { return avx2 && fma && f16c; }
  bool has_avx512_path() const {
    return has_avx2_path() && avx512f && avx512bw && avx512vl && avx512dq && avx512vnni && avx512bf16;
  }
  std::string describe() const;  // e.g. "avx2 fma f16c avx512f ..."
};

const CpuFeatures& cpu_features();

}  // namespace qinfer::ops
