#include "ops/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace qinfer::ops {
namespace {

uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  const bool fma = c & (1u << 12), f16c = c & (1u << 29), avx = c & (1u << 28);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;
  if (!ymm_state) return f;
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.clflushopt = b & (1u << 23);
  f.avx2 = b & (1u << 5);
  f.fma = fma;
  f.f16c = f16c;
  if (zmm_state) {
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512vnni = c & (1u << 11);
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    f.avx512bf16 = a1 & (1u << 5);
  }
  // AMX: cpuid 7.0 edx bit 22 (AMX-BF16), 24 (AMX-TILE); XCR0 bits 17-18 (tile
  // config and data) enabled by the OS; then the per-process permission for the
  // 8 KiB tile data state (Linux 5.16+; an older kernel refuses, as does a VM
  // that lists the feature but does not back it).
  // (matmul_amx.cc also uses AVX512-VBMI, cpuid 7.0 ecx bit 1: every AMX CPU has it.)
  const bool amx_cpu = (d & (1u << 22)) && (d & (1u << 24)) && (c & (1u << 1));
  if (amx_cpu && (xcr0 & (3u << 17)) == (3u << 17) && f.avx512bf16) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    f.amx_bf16 = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#endif
  }
  return f;
}

}  // namespace

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2"); add(fma, "fma"); add(f16c, "f16c");
  add(avx512f, "avx512f"); add(avx512bw, "avx512bw"); add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq"); add(avx512vnni, "avx512_vnni"); add(avx512bf16, "avx512_bf16");
  add(amx_bf16, "amx_bf16");
  return s.empty() ? "baseline" : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

}  // namespace qinfer::ops
