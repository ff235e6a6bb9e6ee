#!/usr/bin/env bash
# End-to-end test of `qinfer serve` on loopback: for the id-only fixture model and the demo
# model (made with `qinfer synth --demo` unless QINFER_DEMO_MODEL names one), start the
# server on a free 127.0.0.1 port, wait for /health, run curl checks and the node tests
# (official `openai` npm client; the chat page in headless Chromium for the demo model), and
# stop the server with SIGTERM (it must drain and exit 0). Then HTTPS with a self-signed
# certificate, and two replicas behind nginx (deploy/nginx/qinfer.conf). Bounded: each
# server gets 10 min.
#   tests/server_e2e/run.sh [BUILD_DIR]        (default: build/)
set -Eeuo pipefail
trap 'echo "server e2e: FAILED at line $LINENO: $BASH_COMMAND" >&2' ERR
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
QINFER="$BUILD/qinfer"
DEMO_TOKENIZER="$ROOT/assets/tokenizer/qwen3.5"
FIXTURES="$ROOT/tests/fixtures"
[ -x "$QINFER" ] || { echo "no $QINFER (build the qinfer target first)" >&2; exit 1; }
TMP="$(mktemp -d)"
SERVER_PID=""
NGINX_PID=""
REPLICA_PIDS=()
cleanup() {
  local p
  for p in "$SERVER_PID" "${REPLICA_PIDS[@]}"; do
    if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then kill -KILL "$p"; wait "$p" 2>/dev/null || true; fi
  done
  if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then kill -TERM "$NGINX_PID"; wait "$NGINX_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

if [ ! -d "$HERE/node_modules/openai" ] || [ ! -d "$HERE/node_modules/playwright-core" ]; then
  (cd "$HERE" && npm ci --no-audit --no-fund >/dev/null)
fi

start_server() {  # MODEL_DIR NAME [extra flags...]   (sets SERVER_PID, PORT, BASE; log in $TMP/server.err)
  local dir="$1" name="$2"; shift 2
  "$QINFER" serve "$dir" --host 127.0.0.1 --port 0 --served-model-name "$name" --api-key sk-e2e \
    --max-num-seqs 32 "$@" >"$TMP/server.out" 2>"$TMP/server.err" &
  SERVER_PID=$!
  wait_ready "$SERVER_PID" "$TMP/server.out" "$TMP/server.err"
  PORT="$READY_PORT"; BASE="$READY_BASE"
}

wait_ready() {  # PID STDOUT STDERR -> READY_PORT, READY_BASE once /health is 200
  local pid="$1" out="$2" err="$3" scheme
  READY_PORT=""
  for _ in $(seq 1 600); do
    READY_PORT="$(sed -n 's|^qinfer serve: listening on https\{0,1\}://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$out")"
    scheme="$(sed -n 's|^qinfer serve: listening on \(https\{0,1\}\)://.*|\1|p' "$out")"
    [ -n "$READY_PORT" ] && curl -skf "$scheme://127.0.0.1:$READY_PORT/health" >/dev/null && break
    kill -0 "$pid" 2>/dev/null || { cat "$err" >&2; echo "server died" >&2; exit 1; }
    sleep 0.2
  done
  [ -n "$READY_PORT" ] || { cat "$err" >&2; echo "server did not come up" >&2; exit 1; }
  READY_BASE="$scheme://127.0.0.1:$READY_PORT"
}

stop_server() {  # SIGTERM: the server drains and must exit 0
  local rc=0
  kill -TERM "$SERVER_PID"; wait "$SERVER_PID" || rc=$?
  SERVER_PID=""
  [ "$rc" = 0 ] || { tail -n 20 "$TMP/server.err" >&2; echo "server exited $rc after SIGTERM" >&2; exit 1; }
}

metric() {  # NAME -> its value on $BASE/metrics (the one line of that name with labels)
  curl -sf "$BASE/metrics" | sed -n "s/^$1{[^}]*} \([0-9.e+-]*\)\$/\1/p" | head -n 1
}

wait_metric() {  # NAME VALUE: up to 10 s
  local _
  for _ in $(seq 1 200); do awk -v a="$(metric "$1")" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 == b + 0) }' && return 0; sleep 0.05; done
  echo "$1 never reached $2 (now $(metric "$1"))" >&2; exit 1
}

post_completion() {  # BODY OUT_FILE -> the HTTP status on stdout; headers in OUT_FILE.h
  curl -sN -o "$2" -D "$2.h" -w '%{http_code}' -H "Authorization: Bearer sk-e2e" -H 'Content-Type: application/json' \
    "$BASE/v1/completions" -d "$1"
}

curl_checks() {  # MODE
  local mode="$1" auth=(-H "Authorization: Bearer sk-e2e") code
  curl -sf "$BASE/health" >/dev/null
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/models")" = 401 ]
  curl -sf "${auth[@]}" "$BASE/v1/models" | grep -q '"object":"list"'
  # (saved first: grep -q stopping early would SIGPIPE curl and fail the pipeline)
  curl -sf "$BASE/metrics" >"$TMP/metrics.txt"
  grep -q '^vllm:generation_tokens_total{model_name="e2e",engine="0"} ' "$TMP/metrics.txt"
  curl -sf "$BASE/version" | grep -q '"version":'
  curl -sf "$BASE/ping" >/dev/null
  # X-Request-Id: taken from the client, echoed, and on the request's access-log line.
  curl -sf -D "$TMP/h.txt" -o /dev/null "${auth[@]}" -H 'X-Request-Id: e2e-trace-7' "$BASE/v1/models"
  grep -qi '^x-request-id: e2e-trace-7' "$TMP/h.txt"
  # CORS preflight as vLLM's defaults answer it (any origin, no key needed).
  curl -sf -D "$TMP/h.txt" -o /dev/null -X OPTIONS -H 'Origin: http://ui.example' \
    -H 'Access-Control-Request-Method: POST' "$BASE/v1/chat/completions"
  grep -qi '^access-control-allow-origin: \*' "$TMP/h.txt"
  # A vLLM field this server does not implement is a 400 naming it.
  code="$(curl -s -o "$TMP/err.json" -w '%{http_code}' "${auth[@]}" -H 'Content-Type: application/json' \
    "$BASE/v1/completions" -d '{"model": "e2e", "prompt": [1], "max_tokens": 2, "use_beam_search": true}')"
  [ "$code" = 400 ] && grep -q '"param":"use_beam_search"' "$TMP/err.json"
  local prompt='"prompt": [1, 2, 3]'
  [ "$mode" = chat ] && prompt='"prompt": "Hello"'
  curl -sfN "${auth[@]}" -H 'Content-Type: application/json' "$BASE/v1/completions" \
    -d "{\"model\": \"e2e\", $prompt, \"max_tokens\": 3, \"stream\": true}" >"$TMP/sse.txt"
  grep -q '^data: {' "$TMP/sse.txt" && tail -n 2 "$TMP/sse.txt" | grep -q '^data: \[DONE\]'
  code="$(curl -s -o "$TMP/err.json" -w '%{http_code}' "${auth[@]}" -H 'Content-Type: application/json' \
    "$BASE/v1/completions" -d '{"model": "e2e", "prompt": [1], "max_tokens": "x"}')"
  [ "$code" = 400 ] && grep -q '"param":"max_tokens"' "$TMP/err.json"
  if [ "$mode" = chat ]; then
    curl -sf "${auth[@]}" -H 'Content-Type: application/json' "$BASE/v1/chat/completions" \
      -d '{"model": "e2e", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}' \
      | grep -q '"object":"chat.completion"'
    # /tokenize then /detokenize round-trips the text.
    curl -sf -H 'Content-Type: application/json' "$BASE/tokenize" -d '{"model": "e2e", "prompt": "Hello world"}' \
      >"$TMP/tok.json"
    grep -q '"count":2,"max_model_len":[0-9]*,' "$TMP/tok.json"
    curl -sf -H 'Content-Type: application/json' "$BASE/detokenize" \
      -d "{\"tokens\": $(sed 's/.*"tokens":\(\[[0-9,]*\]\).*/\1/' "$TMP/tok.json")}" | grep -q '"prompt":"Hello world"'
    curl -sf "$BASE/" >"$TMP/page.html"
    grep -q '<title>qinfer chat</title>' "$TMP/page.html"
  fi
  sleep 0.2
  grep -q '^.*access: 127\.0\.0\.1 GET /v1/models 200 id=e2e-trace-7 ' "$TMP/server.err" \
    || { echo "no access-log line for e2e-trace-7" >&2; exit 1; }
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
  if [ "$mode" = chat ] && [ ! -x "${QINFER_CHROMIUM:-/usr/bin/chromium}" ]; then
    echo "server e2e: SKIPPED chat page test: ${QINFER_CHROMIUM:-/usr/bin/chromium} is missing" \
      "(scripts/install-deps.sh installs Debian's chromium)" >&2
  elif [ "$mode" = chat ]; then  # the chat page in headless Chromium
    (cd "$HERE" && QINFER_BASE="$BASE" QINFER_API_KEY=sk-e2e QINFER_SCREENSHOT="${QINFER_SCREENSHOT:-$TMP/webui.png}" \
      timeout 300 node --test --test-reporter=spec webui.test.mjs)
  fi
  stop_server
}

tls_suite() {  # MODEL_DIR: HTTPS with a self-signed certificate made here by the openssl CLI
  if ! command -v openssl >/dev/null; then
    echo "server e2e: SKIPPED TLS suite: the openssl CLI is not installed (scripts/install-deps.sh installs it)" >&2
    return 0
  fi
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/key.pem" -out "$TMP/cert.pem" -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
  start_server "$1" e2e --ssl-keyfile "$TMP/key.pem" --ssl-certfile "$TMP/cert.pem"
  case "$BASE" in https://*) ;; *) echo "TLS server did not say https: $BASE" >&2; exit 1 ;; esac
  curl -sf --cacert "$TMP/cert.pem" "$BASE/health" >/dev/null
  curl -sf --cacert "$TMP/cert.pem" -H "Authorization: Bearer sk-e2e" -H 'Content-Type: application/json' \
    "$BASE/v1/completions" -d '{"model": "e2e", "prompt": [1, 2], "max_tokens": 3}' | grep -q '"text_completion"'
  if curl -s --max-time 5 -o /dev/null "http://127.0.0.1:$PORT/health"; then
    echo "plain HTTP was answered on the TLS port" >&2; exit 1
  fi
  if curl -s --max-time 5 -o /dev/null "$BASE/health"; then  # without the CA: verification fails
    echo "the self-signed certificate was accepted without --cacert" >&2; exit 1
  fi
  stop_server
  echo "TLS checks passed"
}

ops_suite() {  # MODEL_DIR: the bounded queue, --request-timeout, and the SIGTERM drain deadline
  # On the demo model (262,144-token context, a 248k-row lm_head) 100,000 tokens run for
  # minutes on any host, far past the 1 s timeout and the 1 s drain deadline; the tiny
  # fixture model's 4,000-token context ran out in under a second on a fast host.
  local long='{"model": "e2e", "prompt": [1, 2, 3], "max_tokens": 100000, "ignore_eos": true}' q1 q2 code t0 rc
  start_server "$1" e2e --max-num-seqs 1 --max-waiting-requests 1 --request-timeout 1
  post_completion "$long" "$TMP/q1.json" >"$TMP/q1.code" & q1=$!
  wait_metric vllm:num_requests_running 1
  post_completion '{"model": "e2e", "prompt": [4, 5], "max_tokens": 3}' "$TMP/q2.json" >"$TMP/q2.code" & q2=$!
  wait_metric vllm:num_requests_waiting 1
  # One running + one waiting fill it: the next request is refused at once, not queued.
  code="$(post_completion "$long" "$TMP/q3.json")"
  [ "$code" = 503 ] && grep -q '"code":"queue_full"' "$TMP/q3.json" && grep -qi '^retry-after: 1' "$TMP/q3.json.h" \
    || { echo "full queue: HTTP $code $(cat "$TMP/q3.json")" >&2; exit 1; }
  wait "$q1" "$q2"
  # The long request was ended by --request-timeout (504), then the waiting one ran.
  [ "$(cat "$TMP/q1.code")" = 504 ] && grep -q '"code":"request_timeout"' "$TMP/q1.json" \
    || { echo "timeout: HTTP $(cat "$TMP/q1.code") $(head -c 300 "$TMP/q1.json")" >&2; exit 1; }
  [ "$(cat "$TMP/q2.code")" = 200 ] && grep -q '"finish_reason":"length"' "$TMP/q2.json"
  [ "$(metric qinfer_requests_rejected_total)" = 1.0 ]
  stop_server
  # SIGTERM with a stream running past --drain-timeout: new requests get 503 while it drains,
  # the stream is cut at the deadline, and the process still exits 0.
  start_server "$1" e2e --drain-timeout 1
  { post_completion "${long%\}}, \"stream\": true}" "$TMP/d1.txt" >/dev/null || true; } & q1=$!  # cut: curl fails
  wait_metric vllm:num_requests_running 1
  t0=$(date +%s%N)
  kill -TERM "$SERVER_PID"
  for _ in $(seq 1 100); do grep -q 'draining:' "$TMP/server.err" && break; sleep 0.02; done
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/health")" = 503 ]
  [ "$(post_completion '{"model": "e2e", "prompt": [1], "max_tokens": 2}' "$TMP/d2.json")" = 503 ]
  rc=0; wait "$SERVER_PID" || rc=$?
  SERVER_PID=""
  wait "$q1"
  [ "$rc" = 0 ] || { tail -n 20 "$TMP/server.err" >&2; echo "drained server exited $rc" >&2; exit 1; }
  (( ($(date +%s%N) - t0) / 1000000 < 4000 )) || { echo "drain took longer than its 1 s deadline + 3 s" >&2; exit 1; }
  grep -q 'drain deadline passed with 1 request(s) still running' "$TMP/server.err"
  grep -q '^data: {' "$TMP/d1.txt"
  echo "queue, timeout and drain checks passed"
}

deploy_suite() {  # MODEL_DIR: two replicas behind nginx with deploy/nginx/qinfer.conf
  if ! command -v nginx >/dev/null; then
    echo "server e2e: SKIPPED deploy suite: nginx is not installed (scripts/install-deps.sh installs it)" >&2; return 0
  fi
  local dir="$1" i pids=() bases=() ng="$TMP/nginx" lbport
  for i in 1 2; do
    "$QINFER" serve "$dir" --host 127.0.0.1 --port 0 --served-model-name e2e --api-key sk-e2e --max-num-seqs 8 \
      --max-model-len 4k --enable-prefix-caching >"$TMP/replica$i.out" 2>"$TMP/replica$i.err" &
    pids+=($!)
    REPLICA_PIDS+=($!)
  done
  for i in 0 1; do
    wait_ready "${pids[$i]}" "$TMP/replica$((i + 1)).out" "$TMP/replica$((i + 1)).err"
    bases+=("$READY_BASE")
  done
  grep -q 'prefix caching: budget' "$TMP/replica1.err"
  curl -sf -H "Authorization: Bearer sk-e2e" "${bases[0]}/v1/models" | grep -q '"max_model_len":4000'
  lbport="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  mkdir -p "$ng/logs"
  sed -e "s|127\.0\.0\.1:8001|${bases[0]#http://}|" -e "s|127\.0\.0\.1:8002|${bases[1]#http://}|" \
      -e "s|listen 8000;|listen 127.0.0.1:$lbport;|" "$ROOT/deploy/nginx/qinfer.conf" >"$ng/qinfer.conf"
  {
    [ "$(id -u)" = 0 ] && echo "user root;"
    echo "worker_processes 1; pid $ng/nginx.pid; error_log $ng/logs/error.log warn;"
    echo "events { worker_connections 256; }"
    echo "http { access_log $ng/logs/access.log; client_body_temp_path $ng/body; proxy_temp_path $ng/proxy;"
    echo "  fastcgi_temp_path $ng/fastcgi; uwsgi_temp_path $ng/uwsgi; scgi_temp_path $ng/scgi;"
    echo "  include $ng/qinfer.conf; }"
  } >"$ng/nginx.conf"
  nginx -p "$ng" -c "$ng/nginx.conf" -t -q
  nginx -p "$ng" -c "$ng/nginx.conf" -g 'daemon off;' &
  NGINX_PID=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$lbport/health" >/dev/null && break; sleep 0.1; done
  (cd "$HERE" && QINFER_LB="http://127.0.0.1:$lbport" QINFER_REPLICAS="${bases[0]},${bases[1]}" \
    QINFER_REPLICA_PIDS="${pids[0]},${pids[1]}" QINFER_MODEL_NAME=e2e QINFER_API_KEY=sk-e2e \
    timeout 300 node --test --test-reporter=spec deploy.test.mjs) || { tail -n 5 "$ng/logs/error.log" >&2; exit 1; }
  # The replica the test stopped with SIGTERM drained and exited 0; stop the other the same way.
  local rc
  for i in 0 1; do
    kill -TERM "${pids[$i]}" 2>/dev/null || true
    rc=0; wait "${pids[$i]}" || rc=$?
    [ "$rc" = 0 ] || { tail -n 20 "$TMP/replica$((i + 1)).err" >&2; echo "replica $((i + 1)) exited $rc" >&2; exit 1; }
  done
  REPLICA_PIDS=()
  kill -QUIT "$NGINX_PID"; wait "$NGINX_PID" 2>/dev/null || true; NGINX_PID=""
  echo "deploy checks passed"
}

greedy_ids() {  # the token_ids of one greedy completion of [1..5]
  curl -sf -H "Authorization: Bearer sk-e2e" -H 'Content-Type: application/json' "$BASE/v1/completions" \
    -d '{"model": "e2e", "prompt": [1, 2, 3, 4, 5], "max_tokens": 12, "temperature": 0}' \
    | grep -o '"token_ids":\[[0-9,]*\]'
}

spec_suite() {  # MODEL_DIR: MTP speculative decoding (--speculative-config) on the id fixture
  # The same greedy ids as without it, the spec-decode counters on /metrics after the reply,
  # and the whole ids suite again with every request drafting.
  local spec='{"method": "mtp", "num_speculative_tokens": 3}' plain drafts draft_tokens
  start_server "$1" e2e
  plain="$(greedy_ids)"
  stop_server
  start_server "$1" e2e --speculative-config "$spec"
  [ "$(greedy_ids)" = "$plain" ] || { echo "speculative greedy ids differ: $(greedy_ids) vs $plain" >&2; exit 1; }
  drafts="$(metric vllm:spec_decode_num_drafts_total)"
  draft_tokens="$(metric vllm:spec_decode_num_draft_tokens_total)"
  awk -v d="$drafts" -v t="$draft_tokens" 'BEGIN { exit !(d != "" && d + 0 > 0 && t + 0 >= d + 0) }' \
    || { curl -s "$BASE/metrics" | grep spec_decode >&2; echo "spec-decode counters missing" >&2; exit 1; }
  stop_server
  echo "speculative decoding checks passed"
  run_suite "$1" ids --speculative-config "$spec"
}

mm_suite() {  # images: the demo model with a random vision tower (qinfer synth --demo --vision)
  # The model card's example with Python requests, then the openai client (mm.test.mjs): greedy
  # answers and usage equal to `qinfer generate --image` on the same prompt, streaming, file://,
  # http:// from 127.0.0.1, two images, one too many, bad images.
  local dir="$TMP/demo-vision" media="$TMP/media" img="$FIXTURES/multimodal/mm-s1/images/img_b_100x70.png" n card_n code
  "$QINFER" synth --demo --vision --tokenizer "$DEMO_TOKENIZER" --out "$dir" 2>"$TMP/synth.err" \
    || { cat "$TMP/synth.err" >&2; exit 1; }
  mkdir -p "$media" && cp "$img" "$media/"
  "$QINFER" generate --model "$dir" --prompt "Describe this image." --chat --no-think --image "$img" \
    --max-tokens 12 --temperature 0 >"$TMP/greedy.txt" 2>"$TMP/greedy.err" || { cat "$TMP/greedy.err" >&2; exit 1; }
  n="$(sed -n 's/.* \([0-9][0-9]*\) prompt tokens, .*/\1/p' "$TMP/greedy.err")"
  [ -n "$n" ] || { cat "$TMP/greedy.err" >&2; echo "no prompt token count from qinfer generate" >&2; exit 1; }
  # The model card's request leaves thinking on: its prompt is the one `generate --chat` renders.
  "$QINFER" generate --model "$dir" --prompt "Describe this image." --chat --image "$img" --max-tokens 1 \
    >/dev/null 2>"$TMP/card_gen.err" || { cat "$TMP/card_gen.err" >&2; exit 1; }
  card_n="$(sed -n 's/.* \([0-9][0-9]*\) prompt tokens, .*/\1/p' "$TMP/card_gen.err")"
  start_server "$dir" e2e --limit-mm-per-prompt '{"image": 2}' --allowed-local-media-path "$media"
  python3 "$HERE/model_card_example.py" "$BASE" sk-e2e "$img" e2e >"$TMP/card.json"
  python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["usage"]["prompt_tokens"] != int(sys.argv[2]))' \
    "$TMP/card.json" "$card_n" \
    || { echo "model card example: usage.prompt_tokens is not $card_n: $(head -c 400 "$TMP/card.json")" >&2; exit 1; }
  (cd "$HERE" && QINFER_BASE_URL="$BASE/v1" QINFER_MODEL_NAME=e2e QINFER_API_KEY=sk-e2e QINFER_IMAGE="$img" \
    QINFER_MEDIA_DIR="$media" QINFER_GREEDY_FILE="$TMP/greedy.txt" QINFER_GREEDY_PROMPT_TOKENS="$n" \
    timeout 300 node --test --test-concurrency=1 --test-reporter=spec mm.test.mjs)
  if [ -x "${QINFER_CHROMIUM:-/usr/bin/chromium}" ]; then  # the chat page's image button
    (cd "$HERE" && QINFER_BASE="$BASE" QINFER_API_KEY=sk-e2e QINFER_IMAGE="$img" QINFER_IMAGE_PROMPT_TOKENS="$card_n" \
      QINFER_SCREENSHOT="$TMP/webui-mm.png" timeout 300 node --test --test-reporter=spec webui.test.mjs)
  else
    echo "server e2e: SKIPPED chat page image test: ${QINFER_CHROMIUM:-/usr/bin/chromium} is missing" >&2
  fi
  stop_server
  start_server "$dir" e2e --language-model-only
  code="$(curl -s -o "$TMP/err.json" -w '%{http_code}' -H "Authorization: Bearer sk-e2e" -H 'Content-Type: application/json' \
    "$BASE/v1/chat/completions" -d '{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": "data:image/png;base64,AAAA"}]}]}')"
  [ "$code" = 400 ] && grep -q 'language-model-only' "$TMP/err.json" || { echo "--language-model-only: HTTP $code" >&2; exit 1; }
  stop_server
  echo "image checks passed"
}

TINY="$FIXTURES/text/qwen35moe-tiny-s1/bf16"
SUITES=" ${QINFER_E2E_SUITES:-ids spec tls ops deploy chat mm} "  # a subset while iterating, e.g. "ops deploy"
suite_on() { case "$SUITES" in *" $1 "*) return 0 ;; *) echo "server e2e: $1 suite not selected" >&2; return 1 ;; esac; }
timed() {  # NAME CMD...: runs it and prints its wall time
  local t0=$SECONDS; "${@:2}"; echo "server e2e: $1 suite took $((SECONDS - t0)) s" >&2
}
if suite_on ids; then timed ids run_suite "$TINY" ids; fi
if suite_on spec; then timed spec spec_suite "$TINY"; fi
if suite_on tls; then timed tls tls_suite "$TINY"; fi
if suite_on deploy; then timed deploy deploy_suite "$TINY"; fi
DEMO="${QINFER_DEMO_MODEL:-}"
if [ -z "$DEMO" ] && { suite_on ops || suite_on chat; } 2>/dev/null; then
  DEMO="$TMP/demo"
  "$QINFER" synth --demo --tokenizer "$DEMO_TOKENIZER" --out "$DEMO" 2>"$TMP/synth.err" \
    || { cat "$TMP/synth.err" >&2; exit 1; }
fi
if suite_on ops; then timed ops ops_suite "$DEMO"; fi
if suite_on chat; then timed chat run_suite "$DEMO" chat; fi
if suite_on mm; then timed mm mm_suite; fi
echo "server e2e: all passed"
