#!/usr/bin/env bash
# Installs every Debian package qinfer needs to build, test and benchmark.
set -euo pipefail
# As root apt-get runs directly; otherwise through sudo, and where there is no sudo the
# script says what to run as root instead of failing on a missing command.
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else SUDO="__none__"; fi
fi
PKGS=(build-essential cmake ninja-build pkg-config
      nlohmann-json3-dev libcpp-httplib-dev libpcre2-dev libicu-dev
      libgtest-dev libgmock-dev libbenchmark-dev libedit-dev
      libpng-dev libjpeg62-turbo-dev libwebp-dev libgif-dev
      curl python3 python3-jinja2 python3-numpy python3-requests
      libssl-dev openssl nginx chromium   # TLS (cpp-httplib SSLServer), e2e: nginx replicas, headless Chromium
      clang-14 libclang-rt-14-dev)        # scripts/build-clang.sh, sanitize.sh, fuzz.sh (ASan/UBSan, libFuzzer)
# node and npm: the nodesource 'nodejs' package ships npm itself and conflicts with
# Debian's 'npm'; install Debian's pair only where no node is present at all.
command -v node >/dev/null 2>&1 || PKGS+=(nodejs)
command -v npm >/dev/null 2>&1 || PKGS+=(npm)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$SUDO" = "__none__" ]; then
    echo "install-deps.sh: missing packages: ${missing[*]}" >&2
    echo "not root and no sudo here; run as root instead:" >&2
    echo "  su -c 'apt-get update && apt-get install -y --no-install-recommends ${missing[*]}'" >&2
    echo "  (or: su -c 'bash $(cd "$(dirname "$0")" && pwd)/install-deps.sh')" >&2
    exit 1
  fi
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >&2
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
