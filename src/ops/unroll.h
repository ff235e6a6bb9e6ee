// Compile-time unrolling helpers for the SIMD kernel headers: the loop-unroll
// pragma, and a runtime count turned into a template argument.
#pragma once

#include <cstdint>
#include <type_traits>

#define QINFER_UNROLL _Pragma("GCC unroll 16")

namespace qinfer::ops::detail {

// Calls f(std::integral_constant<int, k>{}) for the k in [1, Max] equal to n,
// nothing when n is outside: the last rows of a tiled loop, run as one tile of
// that many rows (the tile's row count must be a template argument).
template <int Max, class F>
inline void for_count(int64_t n, F&& f) {
  if constexpr (Max > 0) {
    if (n == Max) f(std::integral_constant<int, Max>{});
    else for_count<Max - 1>(n, f);
  }
}

// n rows in ceil(n / Max) passes of nearly equal size (16 rows at Max 12: 8 + 8, not
// 12 + 4, whose short pass would wait on the FMA latency): f(nx, j) runs rows
// [j, j + nx) with nx a std::integral_constant.
template <int Max, class F>
inline void for_even_passes(int64_t n, F&& f) {
  const int64_t passes = (n + Max - 1) / Max;
  for (int64_t p = 0, j = 0; p < passes; ++p) {
    const int64_t rows = (n - j) / (passes - p);
    for_count<Max>(rows, [&](auto nx) { f(nx, j); });
    j += rows;
  }
}

}  // namespace qinfer::ops::detail
