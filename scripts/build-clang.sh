#!/usr/bin/env bash
# Builds everything with clang++-14 into build-clang/ and runs the unit tests there
# (qinfer must compile and pass with both g++ and clang). Usage:
#   bash scripts/build-clang.sh [ninja targets...]     (JOBS=N to set the parallelism)
# ccache is used when it is installed. With targets given, only those are built and
# ctest is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
CXX_CLANG=${CXX_CLANG:-clang++-14}
CC_CLANG=${CC_CLANG:-clang-14}
command -v "$CXX_CLANG" >/dev/null || { echo "build-clang.sh: $CXX_CLANG not found (bash scripts/install-deps.sh)" >&2; exit 1; }
JOBS=${JOBS:-$(nproc)}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-clang -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$CXX_CLANG" -DCMAKE_C_COMPILER="$CC_CLANG" "${launcher[@]}" >/dev/null
ninja -C build-clang -j"$JOBS" "$@"
[ $# -gt 0 ] && exit 0
cd build-clang && ctest --output-on-failure -j"$JOBS" --timeout 600
