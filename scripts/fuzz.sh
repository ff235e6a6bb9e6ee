#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-14 with ASan+UBSan) in build-fuzz/ and runs each
# for SECONDS (default 30; or FUZZ_SECONDS), starting from the seed corpus fuzz/corpus/<target>/.
#   bash scripts/fuzz.sh [SECONDS] [target ...]       targets: the names below (default all)
# Fails on any crash, leak, sanitizer report, uncaught exception, timeout (FUZZ_TIMEOUT s per
# input, default 10) or out-of-memory (FUZZ_RSS_MB, default 2048). A failing input is saved in
# build-fuzz/crashes/<target>/ and the command that reproduces it is printed. New inputs the
# fuzzer finds go to build-fuzz/corpus/<target>/ (kept between runs), never into fuzz/corpus/.
set -euo pipefail
cd "$(dirname "$0")/.."
ALL=(safetensors_header config_json tokenizer_load tokenizer_codec jinja_template openai_request tool_reasoning_parsers)
SECONDS_EACH=${FUZZ_SECONDS:-30}
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then SECONDS_EACH=$1; shift; fi
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")
for t in "${TARGETS[@]}"; do
  [[ " ${ALL[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t' (known: ${ALL[*]})" >&2; exit 2; }
done
CXX_CLANG=${CXX_CLANG:-clang++-14}
CC_CLANG=${CC_CLANG:-clang-14}
command -v "$CXX_CLANG" >/dev/null || { echo "fuzz.sh: $CXX_CLANG not found (bash scripts/install-deps.sh)" >&2; exit 1; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
B=build-fuzz
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DQINFER_FUZZ=ON \
  -DCMAKE_CXX_COMPILER="$CXX_CLANG" -DCMAKE_C_COMPILER="$CC_CLANG" "${launcher[@]}" >/dev/null
ninja -C $B -j"${JOBS:-$(nproc)}" "${TARGETS[@]/#/fuzz_}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
summary=()
for t in "${TARGETS[@]}"; do
  work=$B/corpus/$t crashes=$B/crashes/$t log=$B/logs/$t.log
  mkdir -p "$work" "$crashes" "$(dirname "$log")"
  echo "=== fuzz_$t: ${SECONDS_EACH}s ===" >&2
  rc=0
  # -close_fd_mask=1: the code's stdout is dropped; stderr keeps the sanitizer reports.
  "$B/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" \
    -print_final_stats=1 -close_fd_mask=1 -artifact_prefix="$crashes/" "$work" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ $rc -ne 0 ]; then
    status=1
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    grep -E "ERROR: |SUMMARY: |runtime error|deadly signal|uncaught|timeout|out-of-memory" "$log" | head -8 >&2 || true
    echo "fuzz_$t FAILED (exit $rc); log: $log" >&2
    [ -n "$artifact" ] && echo "  reproduce: $B/fuzz/fuzz_$t $artifact" >&2
    summary+=("$(printf '%-24s %4ss  %10s execs  FAILED' "$t" "$SECONDS_EACH" "${execs:-?}")")
  else
    summary+=("$(printf '%-24s %4ss  %10s execs  ok' "$t" "$SECONDS_EACH" "${execs:-?}")")
  fi
done
echo "=== fuzz summary ===" >&2
printf '%s\n' "${summary[@]}" >&2
exit $status
