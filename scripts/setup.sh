#!/usr/bin/env bash
# The README's first command: install, build, and run the main job on the demo model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
echo "--- qinfer generate on the bundled demo model (random weights: the text is noise) ---" >&2
./build/qinfer generate --model demo-model --prompt "Write a haiku about the sea." --max-tokens 24 --temperature 0
