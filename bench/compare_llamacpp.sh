#!/usr/bin/env bash
# Side-by-side benchmark of qinfer against llama.cpp on bit-identical weights (issue 19).
#
#   bash bench/compare_llamacpp.sh --build-only            # fetch + build llama.cpp into the cache
#   bash bench/compare_llamacpp.sh --synth DIR [options]   # GGUF from DIR, then alternating pairs
#   bash bench/compare_llamacpp.sh --layers 4 [options]    # make a synth in the work dir first
#
# llama.cpp is built from source, CPU only, into $LLAMA_CPP_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/qinfer/llama.cpp): the sources come from the npm package node-llama-cpp
# (its llama/gitRelease.bundle, fetched with `npm pack`), built once and reused. The GGUF is written by
# the converter synth_to_gguf.py of the shared reference material (../shared/tools/gguf, not part of this
# repository; $QINFER_GGUF_CONVERTER points elsewhere) with llama.cpp's own gguf-py: GPTQ sym g32 experts
# become Q4_0 bit for bit, BF16 dense stays BF16 (or Q8_0 with --dense int8, against qinfer's --dense int8).
#
# Each (threads, dense) setting runs PAIRS alternating pairs: llama-bench once, qinfer bench once,
# so both see the same machine noise; the table reports each engine's median and the ratio of the
# medians. Figures: decode tok/s at ctx 0 and ctx 4096 (llama-bench -n N -d 4096), prefill tok/s over
# 512 tokens, and qinfer's full-model projection (40 layers).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${LLAMA_CPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qinfer/llama.cpp}"
NODE_LLAMA_CPP_VERSION="${NODE_LLAMA_CPP_VERSION:-3.22.1}"
QINFER="${QINFER:-$ROOT/build/qinfer}"
CONVERTER="${QINFER_GGUF_CONVERTER:-$ROOT/../shared/tools/gguf/synth_to_gguf.py}"
PY="${PYTHON:-/usr/bin/python3}"

build_only=0; synth=""; layers=""; workdir="${TMPDIR:-/tmp}/qinfer_compare"; pairs=3
threads_list="1 2"; dense_list="bf16"; decode_n=32; ctx_deep=4096; prefill_n=512; keep=0

usage() {
  cat <<EOF
usage: bash bench/compare_llamacpp.sh [--build-only] [--synth DIR | --layers N] [options]
  --synth DIR      a qinfer synth checkpoint (GPTQ int4 sym g32 experts, BF16 dense)
  --layers N       make one with 'qinfer synth --layers N' (N >= 4) in the work dir (deleted afterwards
                   unless --keep)
  --workdir DIR    where the synth and the GGUF go (default $workdir)
  --threads "1 2"  thread counts to measure (default "$threads_list")
  --dense "bf16 bf16c int8"  dense encodings: bf16 = BF16 in both engines; bf16c = qinfer's lossless
                   12-bit form of the same BF16 values (--dense bf16c) against llama.cpp BF16; auto =
                   qinfer's default (one of the two, by its probe); int8 = qinfer --dense int8 against
                   llama.cpp Q8_0 dense (default "$dense_list")
  --pairs N        alternating pairs per setting (default $pairs)
  --decode N       decode tokens per measurement (default $decode_n)
  --ctx N          the deep-context decode point (default $ctx_deep)
  --build-only     only fetch and build llama.cpp (into \$LLAMA_CPP_CACHE=$CACHE)
  --keep           keep the synth checkpoint and GGUF files
environment: LLAMA_CPP_CMAKE_ARGS (extra cmake arguments for the llama.cpp build, e.g. a build without its
  AMX kernels, which fault on some AMX hosts: see docs/PERFORMANCE.md), QINFER (binary, default build/qinfer),
  QINFER_GGUF_CONVERTER (default
  $CONVERTER), LLAMA_CPP_CACHE, NODE_LLAMA_CPP_VERSION
  ($NODE_LLAMA_CPP_VERSION), PYTHON (needs numpy), QINFER_KERNEL_OPTS (passed to qinfer bench).
EOF
}

die() { echo "compare_llamacpp: $*" >&2; exit 1; }
log() { echo "[compare_llamacpp $(date +%H:%M:%S)] $*" >&2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --build-only) build_only=1 ;;
    --synth) synth="${2:?--synth needs a directory}"; shift ;;
    --layers) layers="${2:?--layers needs a number}"; shift ;;
    --workdir) workdir="${2:?--workdir needs a directory}"; shift ;;
    --threads) threads_list="${2:?--threads needs a list}"; shift ;;
    --dense) dense_list="${2:?--dense needs a list}"; shift ;;
    --pairs) pairs="${2:?--pairs needs a number}"; shift ;;
    --decode) decode_n="${2:?--decode needs a number}"; shift ;;
    --ctx) ctx_deep="${2:?--ctx needs a number}"; shift ;;
    --keep) keep=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
  shift
done
for d in $dense_list; do
  case "$d" in bf16|bf16c|auto|int8) ;; *) die "--dense: '$d' is not bf16, bf16c, auto or int8" ;; esac
done
for n in "$pairs" "$decode_n" "$ctx_deep" $threads_list ${layers:+"$layers"}; do
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || die "'$n' is not a positive whole number"
done
[ -z "$layers" ] || [ "$layers" -ge 4 ] \
  || die "--layers $layers: llama.cpp needs a full-attention layer, the synth's first is layer 4 (--layers 4 or more)"

# ---------------------------------------------------------------- llama.cpp, built once
LLAMA_SRC="$CACHE/src"
LLAMA_BENCH="$LLAMA_SRC/build/bin/llama-bench"
build_llamacpp() {
  if [ -x "$LLAMA_BENCH" ]; then
    log "llama.cpp: using $LLAMA_BENCH ($(git -C "$LLAMA_SRC" rev-parse --short HEAD 2>/dev/null || echo '?'))"
    return
  fi
  mkdir -p "$CACHE"
  if [ ! -d "$LLAMA_SRC/.git" ]; then
    command -v npm >/dev/null || die "npm is needed to fetch node-llama-cpp (llama.cpp's sources)"
    log "fetching node-llama-cpp@$NODE_LLAMA_CPP_VERSION (llama.cpp sources as a git bundle)"
    local tgz
    tgz="$(cd "$CACHE" && npm pack --silent "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" | tail -1)"
    [ -f "$CACHE/$tgz" ] || die "npm pack node-llama-cpp@$NODE_LLAMA_CPP_VERSION gave no tarball"
    tar -xzf "$CACHE/$tgz" -C "$CACHE" package/llama/gitRelease.bundle \
      || die "$CACHE/$tgz has no package/llama/gitRelease.bundle"
    git -c advice.detachedHead=false clone --quiet "$CACHE/package/llama/gitRelease.bundle" "$LLAMA_SRC" \
      || die "git clone of $CACHE/package/llama/gitRelease.bundle failed"
    rm -rf "$CACHE/package" "$CACHE/$tgz"
  fi
  log "building llama.cpp $(git -C "$LLAMA_SRC" rev-parse --short HEAD) CPU-only (llama-bench; long on few cores)"
  cmake -S "$LLAMA_SRC" -B "$LLAMA_SRC/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF ${LLAMA_CPP_CMAKE_ARGS:-} >"$CACHE/cmake.log" 2>&1 || die "cmake failed, see $CACHE/cmake.log"
  nice cmake --build "$LLAMA_SRC/build" --target llama-bench -j"${LLAMA_BUILD_JOBS:-2}" \
    >"$CACHE/build.log" 2>&1 || die "llama.cpp build failed, see $CACHE/build.log"
  [ -x "$LLAMA_BENCH" ] || die "the build made no $LLAMA_BENCH"
  log "built $LLAMA_BENCH"
}
build_llamacpp
[ "$build_only" = 1 ] && exit 0

# ---------------------------------------------------------------- checkpoint and GGUF files
[ -x "$QINFER" ] || die "no qinfer binary at $QINFER (build it: bash scripts/build.sh, or set QINFER)"
[ -f "$CONVERTER" ] || die "missing GGUF converter $CONVERTER (synth_to_gguf.py from the shared tools/gguf; set QINFER_GGUF_CONVERTER)"
"$PY" -c 'import numpy' 2>/dev/null || die "$PY lacks numpy (apt-get install python3-numpy)"
mkdir -p "$workdir"
made_synth=0
if [ -z "$synth" ]; then
  [ -n "$layers" ] || { usage >&2; die "give --synth DIR or --layers N"; }
  synth="$workdir/synth$layers"
  if [ ! -f "$synth/config.json" ]; then
    log "qinfer synth --layers $layers -> $synth"
    "$QINFER" synth --out "$synth" --layers "$layers" >&2 || die "qinfer synth failed"
    made_synth=1
  fi
fi
[ -f "$synth/config.json" ] || die "$synth is not a checkpoint (no config.json)"
# llama.cpp aborts (GGML_ASSERT(buffer) in ggml-backend.cpp) on a model with no KV layer: the
# synth's first full-attention layer is layer 3 (full_attention_interval 4), so --layers >= 4.
"$PY" - "$synth/config.json" <<'PYEOF' || die "$synth has no full-attention layer: llama.cpp cannot run it (use --layers 4 or more)"
import json, sys
c = json.load(open(sys.argv[1])); t = c.get("text_config", c)
sys.exit(0 if "full_attention" in t.get("layer_types", []) else 1)
PYEOF
cleanup() {
  [ "$keep" = 1 ] && return
  rm -f "$workdir"/*.gguf
  [ "$made_synth" = 1 ] && rm -rf "$synth"
  true
}
trap cleanup EXIT

gguf_for() {  # dense encoding -> GGUF path (written once)
  local q; q=$([ "$1" = int8 ] && echo q8_0 || echo bf16)
  local out="$workdir/$(basename "$synth")_$q.gguf"
  if [ ! -f "$out" ]; then
    log "writing $out (llama.cpp gguf-py; experts Q4_0 bit for bit, dense $q)"
    PYTHONPATH="$LLAMA_SRC/gguf-py" nice "$PY" "$CONVERTER" "$synth" "$out.part" --dense "$q" >&2 \
      || die "GGUF conversion of $synth failed"
    mv "$out.part" "$out"
  fi
  echo "$out"
}

# ---------------------------------------------------------------- alternating pairs
results="$workdir/results.tsv"   # engine dense threads pair metric tok/s
: >"$results"
llama_parse() {  # json-file dense threads pair: one result row per llama-bench test
  "$PY" - "$@" "$prefill_n" >>"$results" <<'PYEOF'
import json, sys
path, dense, threads, pair, pn = sys.argv[1:6]
for r in json.load(open(path)):
    m = f"prefill {pn}" if r["n_prompt"] > 0 else f"decode ctx {r.get('n_depth', 0)}"
    print(f"llama.cpp\t{dense}\t{threads}\t{pair}\t{m}\t{r['avg_ts']:.3f}")
PYEOF
}
llama_run() {  # gguf threads pair dense: prefill + decode at ctx 0, then decode at ctx $ctx_deep
  local js="$workdir/llama_$4_t$2_p$3"
  "$LLAMA_BENCH" -m "$1" -t "$2" -p "$prefill_n" -n "$decode_n" -r 1 -o json >"$js.0.json" 2>"$js.log" \
    || die "llama-bench failed on $1, see $js.log"
  llama_parse "$js.0.json" "$4" "$2" "$3"
  "$LLAMA_BENCH" -m "$1" -t "$2" -p 0 -n "$decode_n" -d "$ctx_deep" -r 1 -o json >"$js.d.json" 2>>"$js.log" \
    || die "llama-bench -d $ctx_deep failed on $1, see $js.log"
  llama_parse "$js.d.json" "$4" "$2" "$3"
}
qinfer_run() {  # threads pair dense
  local out log="$workdir/qinfer_$3_t$1_p$2.log"
  "$QINFER" bench --model "$synth" --threads "$1" --dense "$3" --prefill "$prefill_n" \
    --contexts "0,$ctx_deep" --decode-tokens 8 --rounds 2 >"$log" 2>&1 || die "qinfer bench failed, see $log"
  "$PY" - "$3" "$1" "$2" "$log" >>"$results" <<'PYEOF'
import re, sys
dense, threads, pair, log = sys.argv[1:5]
for line in open(log):
    m = re.match(r"prefill\s+(\d+) tokens:\s+([\d.]+) tokens/s \([\d.]+ s\), ", line)
    if m: print(f"qinfer\t{dense}\t{threads}\t{pair}\tprefill {m[1]}\t{m[2]}")
    m = re.match(r"decode\s+ctx\s+(\d+):\s+([\d.]+) tokens/s", line)
    if m: print(f"qinfer\t{dense}\t{threads}\t{pair}\tdecode ctx {m[1]}\t{m[2]}")
    m = re.match(r"decode\s+ctx\s+(\d+): full model \((\d+) layers.*projected ([\d.]+) tokens/s", line)
    if m: print(f"qinfer\t{dense}\t{threads}\t{pair}\t{m[2]} layers, decode ctx {m[1]}\t{m[3]}")
    if line.startswith("[qinfer info] kernels"): print(line.strip(), file=sys.stderr)
PYEOF
}

log "host: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; qinfer $(git -C "$ROOT" rev-parse --short HEAD), llama.cpp $(git -C "$LLAMA_SRC" rev-parse --short HEAD)"
grep -qw amx_int8 /proc/cpuinfo && log "note: this CPU flags AMX; llama.cpp's AMX Q8_0 kernel (de3ff81) dies with SIGILL here (tilezero on an unconfigured tile); for --dense int8 build llama.cpp without it: LLAMA_CPP_CACHE=DIR LLAMA_CPP_CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON' (docs/PERFORMANCE.md)"
for dense in $dense_list; do
  gguf="$(gguf_for "$dense")"
  for th in $threads_list; do
    for p in $(seq 1 "$pairs"); do
      log "dense $dense, $th threads, pair $p/$pairs: llama-bench"
      llama_run "$gguf" "$th" "$p" "$dense"
      log "dense $dense, $th threads, pair $p/$pairs: qinfer bench"
      qinfer_run "$th" "$p" "$dense"
    done
  done
done

# ---------------------------------------------------------------- table
"$PY" - "$results" <<'PYEOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    eng, dense, th, pair, metric, v = line.rstrip("\n").split("\t")
    rows[(dense, int(th), metric, eng)].append(float(v))
keys = sorted({(d, t, m) for d, t, m, _ in rows})
print(f"{'dense':5} {'thr':>3}  {'metric':<26} {'qinfer tok/s (pairs)':<30} {'llama.cpp tok/s (pairs)':<30} ratio")
for d, t, m in keys:
    q, l = rows.get((d, t, m, "qinfer"), []), rows.get((d, t, m, "llama.cpp"), [])
    fmt = lambda v: " ".join(f"{x:.2f}" for x in v) or "-"
    ratio = f"{statistics.median(q) / statistics.median(l):.2f}x" if q and l else "-"
    print(f"{d:5} {t:>3}  {m:<26} {fmt(q):<30} {fmt(l):<30} {ratio}")
print("ratio = median qinfer / median llama.cpp over the alternating pairs; 'N layers' rows are qinfer's projection "
      "to the full model (no llama.cpp counterpart).")
PYEOF
