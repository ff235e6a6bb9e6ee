// The hint argument of _mm_prefetch from an int template parameter: GCC's intrinsic (when
// optimizing) takes an enum _mm_hint, clang's is a macro over __builtin_prefetch that takes
// the int itself (and has no _mm_hint type).
#pragma once
#include <xmmintrin.h>

#if defined(__clang__)
#define QINFER_MM_HINT(h) (h)
#else
#define QINFER_MM_HINT(h) static_cast<_mm_hint>(h)
#endif
