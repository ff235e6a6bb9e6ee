#!/usr/bin/env bash
# ASan + UBSan build of the unit tests (clang-14, build-asan/) and a ctest run there.
#   bash scripts/sanitize.sh [ctest args...]      e.g. -R 'Tokenizer|Jinja'
# Any sanitizer report fails the test it happens in (halt_on_error, leaks included).
# JOBS=N sets the build and test parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
CXX_CLANG=${CXX_CLANG:-clang++-14}
CC_CLANG=${CC_CLANG:-clang-14}
command -v "$CXX_CLANG" >/dev/null || { echo "sanitize.sh: $CXX_CLANG not found (bash scripts/install-deps.sh)" >&2; exit 1; }
JOBS=${JOBS:-$(nproc)}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DQINFER_SANITIZE=ON \
  -DCMAKE_CXX_COMPILER="$CXX_CLANG" -DCMAKE_C_COMPILER="$CC_CLANG" "${launcher[@]}" >/dev/null
ninja -C build-asan -j"$JOBS"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build-asan && ctest --output-on-failure -j"$JOBS" --timeout 1800 "$@"
