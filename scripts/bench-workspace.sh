#!/usr/bin/env bash
# Runs the request-workspace benchmarks (reset cost per scrub mode: full, shadow, watermark; a
# single cache-resident workspace and a pool twice the last-level cache; the zero-check loop
# beside naive loops; sampled verification overhead) compiled to wasm32-wasip1 under Node, then
# natively, and prints both tables. Arguments go to both runs.
#
#   scripts/bench-workspace.sh [--batches N] [--batch-ms MS] [--pool-mib MIB]
#
# Without --pool-mib the pool is twice the L3 size lscpu reports (256 MiB if it reports none).
#
# To see that the verification loop (edgewise::workspace::verify::is_zero) vectorizes, look at
# the linked binaries this script builds (the release profile's fat LTO runs the vectorizers at
# link time, so `--emit asm` of the lib alone shows scalar code):
#   objdump -d --no-show-raw-insn target/release/workspace_wasm | grep -A60 'is_zero.*>:'
#   node_modules/.bin/wasm-dis target/wasm32-wasip1/release/workspace_wasm.wasm | grep -A300 'func .*is_zero'
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
target_dir="${CARGO_TARGET_DIR:-$ROOT/target}"

if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  log "installing the wasm32-wasip1 target"
  rustup target add wasm32-wasip1
fi

pool=()
if [[ " $* " != *" --pool-mib "* ]]; then
  l3=$(lscpu -B 2>/dev/null | awk '/^L3 cache:/ { print $3; exit }')
  if [[ -n "$l3" && "$l3" =~ ^[0-9]+$ ]]; then
    pool=(--pool-mib "$(((2 * l3 + (1 << 20) - 1) >> 20))")
    log "L3 cache $((l3 >> 20)) MiB: pool of ${pool[1]} MiB"
  fi
fi

log "building workspace_wasm for wasm32-wasip1 and natively (release: fat LTO, takes a while)"
cargo build --release -p edgewise-benches --bin workspace_wasm --target wasm32-wasip1
cargo build --release -p edgewise-benches --bin workspace_wasm

log "wasm32-wasip1 under Node $(node --version)"
# Node 20 flags WASI as experimental on every run; the warning says nothing about the results.
# --single-threaded-gc: Node 20.20 segfaults while tearing down a WASI instance whose memory grew
# past ~120 MiB (the pool), after the module has returned; a single-threaded GC avoids it. The
# module allocates nothing from JS while it runs, so the GC setting does not touch the timings.
node --disable-warning=ExperimentalWarning --single-threaded-gc benches/js/run-wasi.mjs \
  "$target_dir/wasm32-wasip1/release/workspace_wasm.wasm" "${pool[@]}" "$@"

log "native"
"$target_dir/release/workspace_wasm" "${pool[@]}" "$@"
