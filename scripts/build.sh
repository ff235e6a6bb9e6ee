#!/usr/bin/env bash
# Installs the Debian dependencies (scripts/install-deps.sh), configures and builds
# qinfer into build/, and writes the demo model to demo-model/ if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
JOBS=${JOBS:-$(nproc)}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"$JOBS"
if [ ! -f demo-model/config.json ]; then
  echo "writing the demo model (real tokenizer, random weights) to demo-model/" >&2
  ./build/qinfer synth --demo --tokenizer assets/tokenizer/qwen3.5 --out demo-model
fi
