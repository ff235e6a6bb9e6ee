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

}  // namespace qinfer::ops::detail
