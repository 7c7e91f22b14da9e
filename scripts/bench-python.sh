#!/usr/bin/env bash
# Feature lookups from Python (benches/python/lookup.py): the edgewise_features package beside
# redis-py against a real redis-server (Unix socket) and the daemon's memcached-text socket and
# HTTP API, in one run; then the C ABI beside the Rust reader (benches/c/lookup.c and
# benches/src/bin/reader_lookup.rs) on the same store. Installs redis-server (Debian) and
# redis-py (PyPI, into .edgewise/venv) if missing. Release builds; a few minutes on 2 cores and
# ~3 GB of memory at 1M keys.
#
#   scripts/bench-python.sh            KEYS=100000 LOOKUPS=50000 scripts/bench-python.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

bash scripts/setup.sh --test >/dev/null
if ! command -v redis-server >/dev/null 2>&1; then
  log "apt-get install redis-server"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null
fi
venv="$STATE_DIR/venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check redis==8.1.0

log "building edgewised, the C ABI and the reader benchmark (release: fat LTO, takes a while)"
cargo build --release -p edgewise-daemon -p edgewise-ffi -p edgewise-benches --bin edgewised \
  --bin reader_lookup --lib
log "pip install ./python (release build)"
PATH="$venv/bin:$PATH" pip install --quiet --disable-pip-version-check --no-build-isolation ./python

release="${CARGO_TARGET_DIR:-$ROOT/target}/release"
EDGEWISED_BIN="$release/edgewised" PYTHONPATH="$STATE_DIR/python" "$venv/bin/python" benches/python/lookup.py

log "the C ABI beside the Rust reader"
cc -O2 -std=c11 -I ffi/include benches/c/lookup.c "$release/libedgewise_ffi.a" -lpthread -ldl -lm \
  -o "$STATE_DIR/c-lookup"
"$release/reader_lookup" --c-bench "$STATE_DIR/c-lookup"
