#!/usr/bin/env bash
# End-to-end test of `qinfer serve` on loopback: for the id-only fixture model and the demo
# model (made with `qinfer synth --demo` unless QINFER_DEMO_MODEL names one), start the
# server on a free 127.0.0.1 port, wait for /health, run curl checks and the node tests
# (official `openai` npm client), and stop the server. Bounded: each server gets 10 min.
#   tests/server_e2e/run.sh [BUILD_DIR]        (default: build/)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
QINFER="$BUILD/qinfer"
DEMO_TOKENIZER="$ROOT/assets/tokenizer/qwen3.5"
FIXTURES="$ROOT/tests/fixtures"
[ -x "$QINFER" ] || { echo "no $QINFER (build the qinfer target first)" >&2; exit 1; }
TMP="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

if [ ! -d "$HERE/node_modules/openai" ]; then
  (cd "$HERE" && npm ci --no-audit --no-fund >/dev/null)
fi

start_server() {  # MODEL_DIR NAME [extra flags...]
  local dir="$1" name="$2"; shift 2
  "$QINFER" serve "$dir" --host 127.0.0.1 --port 0 --served-model-name "$name" --api-key sk-e2e \
    --max-num-seqs 32 "$@" >"$TMP/server.out" 2>"$TMP/server.err" &
  SERVER_PID=$!
  PORT=""
  for _ in $(seq 1 600); do
    PORT="$(sed -n 's|^qinfer serve: listening on http://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$TMP/server.out")"
    [ -n "$PORT" ] && curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$TMP/server.err" >&2; echo "server died" >&2; exit 1; }
    sleep 0.2
  done
  [ -n "$PORT" ] || { cat "$TMP/server.err" >&2; echo "server did not come up" >&2; exit 1; }
  BASE="http://127.0.0.1:$PORT"
}

stop_server() {
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
}

curl_checks() {  # MODE
  local mode="$1" auth=(-H "Authorization: Bearer sk-e2e")
  curl -sf "$BASE/health" >/dev/null
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/models")" = 401 ]
  curl -sf "${auth[@]}" "$BASE/v1/models" | grep -q '"object":"list"'
  curl -sf "$BASE/metrics" | grep -q '^qinfer_generation_tokens_total'
  local prompt='"prompt": [1, 2, 3]'
  [ "$mode" = chat ] && prompt='"prompt": "Hello"'
  curl -sfN "${auth[@]}" -H 'Content-Type: application/json' "$BASE/v1/completions" \
    -d "{\"model\": \"e2e\", $prompt, \"max_tokens\": 3, \"stream\": true}" >"$TMP/sse.txt"
  grep -q '^data: {' "$TMP/sse.txt" && tail -n 2 "$TMP/sse.txt" | grep -q '^data: \[DONE\]'
  local code
  code="$(curl -s -o "$TMP/err.json" -w '%{http_code}' "${auth[@]}" -H 'Content-Type: application/json' \
    "$BASE/v1/completions" -d '{"model": "e2e", "prompt": [1], "max_tokens": "x"}')"
  [ "$code" = 400 ] && grep -q '"param":"max_tokens"' "$TMP/err.json"
  if [ "$mode" = chat ]; then
    curl -sf "${auth[@]}" -H 'Content-Type: application/json' "$BASE/v1/chat/completions" \
      -d '{"model": "e2e", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}' \
      | grep -q '"object":"chat.completion"'
  fi
  echo "curl checks passed ($mode)"
}

run_suite() {  # MODEL_DIR MODE [extra serve flags...]
  local dir="$1" mode="$2"; shift 2
  start_server "$dir" e2e --reasoning-parser qwen3 --enable-auto-tool-choice --tool-call-parser qwen3_coder \
    --gpu-memory-utilization 0.95 --tensor-parallel-size 4 --dtype float16 --skip-mm-profiling \
    --limit-mm-per-prompt '{"image": 2}' "$@"
  curl_checks "$mode"
  (cd "$HERE" && QINFER_BASE_URL="$BASE/v1" QINFER_MODE="$mode" QINFER_MODEL_NAME=e2e QINFER_API_KEY=sk-e2e \
    timeout 600 node --test --test-concurrency=1 --test-reporter=spec e2e.test.mjs structured.test.mjs)
  stop_server
}

greedy_ids() {  # the token_ids of one greedy completion of [1..5]
  curl -sf -H "Authorization: Bearer sk-e2e" -H 'Content-Type: application/json' "$BASE/v1/completions" \
    -d '{"model": "e2e", "prompt": [1, 2, 3, 4, 5], "max_tokens": 12, "temperature": 0}' \
    | grep -o '"token_ids":\[[0-9,]*\]'
}

spec_counter() {  # NAME: the value of a vllm:spec_decode_* counter on /metrics
  curl -sf "$BASE/metrics" | sed -n "s/^vllm:spec_decode_$1_total{[^}]*} \([0-9]*\)$/\1/p"
}

FIXTURE="$FIXTURES/text/qwen35moe-tiny-s1/bf16"
run_suite "$FIXTURE" ids
# MTP speculative decoding: the same greedy ids as without it, the spec-decode counters on
# /metrics, and the whole ids suite again with every request drafting.
start_server "$FIXTURE" e2e
PLAIN="$(greedy_ids)"
stop_server
SPEC='{"method": "mtp", "num_speculative_tokens": 3}'
start_server "$FIXTURE" e2e --speculative-config "$SPEC"
[ "$(greedy_ids)" = "$PLAIN" ] || { echo "speculative greedy ids differ: $(greedy_ids) vs $PLAIN" >&2; exit 1; }
[ "$(spec_counter num_drafts)" -gt 0 ] && [ "$(spec_counter num_draft_tokens)" -ge "$(spec_counter num_drafts)" ] \
  || { curl -s "$BASE/metrics" | grep spec_decode >&2; echo "spec-decode counters missing" >&2; exit 1; }
stop_server
echo "speculative decoding checks passed"
run_suite "$FIXTURE" ids --speculative-config "$SPEC"
DEMO="${QINFER_DEMO_MODEL:-}"
if [ -z "$DEMO" ]; then
  DEMO="$TMP/demo"
  "$QINFER" synth --demo --tokenizer "$DEMO_TOKENIZER" --out "$DEMO" 2>"$TMP/synth.err" \
    || { cat "$TMP/synth.err" >&2; exit 1; }
fi
run_suite "$DEMO" chat
echo "server e2e: all passed"
