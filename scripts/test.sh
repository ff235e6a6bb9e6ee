#!/usr/bin/env bash
# The README's second command (and what CI runs): build everything, then run the
# GoogleTest suites through ctest, the end-to-end server tests with real clients, and a short
# fuzzing run of each libFuzzer target.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
status=0
(cd build && ctest --output-on-failure -j"${JOBS:-$(nproc)}" --timeout 600) || status=1
for e2e in tests/*/run_e2e.sh tests/server_e2e/run.sh; do
  [ -f "$e2e" ] || continue
  echo "=== $e2e ===" >&2
  bash "$e2e" || status=1
done
# A short libFuzzer run of every target in fuzz/ (clang-14, ASan+UBSan, build-fuzz/): any crash,
# sanitizer report, leak or per-input timeout fails the run (scripts/fuzz.sh; FUZZ_SECONDS each).
echo "=== scripts/fuzz.sh ${FUZZ_SECONDS:-15} ===" >&2
bash scripts/fuzz.sh "${FUZZ_SECONDS:-15}" || status=1
exit $status
