#!/usr/bin/env bash
# Runs the header benchmarks (edgewise's HeaderSet beside std/Fx hash sets, trie-hard,
# radix_trie and the original strip loop) compiled to wasm32-wasip1 under Node, then natively,
# and prints both tables. Arguments go to both runs.
#
#   scripts/bench-headers-wasm.sh [--batches N] [--batch-ms MS]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  log "installing the wasm32-wasip1 target"
  rustup target add wasm32-wasip1
fi

log "building headers_wasm for wasm32-wasip1 and natively (release: fat LTO, takes a while)"
cargo build --release -p edgewise-benches --bin headers_wasm --target wasm32-wasip1
cargo build --release -p edgewise-benches --bin headers_wasm

log "wasm32-wasip1 under Node $(node --version)"
# Node 20 flags WASI as experimental on every run; the warning says nothing about the results.
node --disable-warning=ExperimentalWarning benches/js/run-wasi.mjs \
  target/wasm32-wasip1/release/headers_wasm.wasm "$@"

log "native"
target/release/headers_wasm "$@"
